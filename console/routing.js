import { currentSession } from './api.js';
import { problem, say, whenSignedOut } from './shell.js';

// Views by the URL's fragment (#/, #/new, #/w/<id>, …) — ids only: the token never goes in a URL.
// A view module registers its routes (and, if it has one, its link in the navigation) here; the
// router calls the first route whose pattern matches, with the pattern's groups decoded.

const routes = [];
const navLinks = [];

/** `pattern`: a RegExp over the fragment without '#'; `view(...groups)` renders it. */
export function registerRoute(pattern, view) {
  routes.push({ pattern, view });
}

/** A link in the navigation, shown while signed in (in registration order). */
export function registerNav(label, href) {
  navLinks.push({ label, href });
}

export const nav = () => navLinks;

let signIn = () => {};
let frame = () => {};

/** The view shown while signed out, and what redraws the session bar on every route. */
export function setFrame({ signInView, renderFrame }) {
  signIn = signInView;
  frame = renderFrame;
}

export async function route() {
  frame();
  if (!currentSession()) return signIn();
  const hash = location.hash.replace(/^#/, '') || '/';
  const path = hash.split('?')[0];
  const query = new URLSearchParams(hash.includes('?') ? hash.slice(hash.indexOf('?') + 1) : '');
  for (const r of routes) {
    const m = r.pattern.exec(path);
    if (!m) continue;
    try {
      await r.view(...m.slice(1).map((g) => (g === undefined ? undefined : decodeURIComponent(g))), query);
    } catch (err) {
      problem(err);
    }
    return;
  }
  go('#/');
}

/**
 * Goes to `hash`. Setting the same hash fires no hashchange, so the route runs here then; otherwise
 * the hashchange runs it — once (calling both ran two loads that raced for the same elements).
 */
export function go(hash) {
  if (location.hash === hash || (hash === '#/' && location.hash === '')) void route();
  else location.hash = hash;
}

export function start() {
  whenSignedOut(() => go('#/'));
  window.addEventListener('hashchange', () => {
    say('');
    void route();
  });
  void route();
}
