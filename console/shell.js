import { ApiError, clearSession } from './api.js';
import { h } from './dom.js';

// The page's frame, shared by every view: the status line, the main region, the confirmation
// dialog, and each view's lifetime. A view is "live" until the next one is shown; whatever it
// still awaits or polls after that is dropped, so a late answer never writes into another view.

const main = document.getElementById('main');
const statusLine = document.getElementById('status');
const dialog = document.getElementById('dialog');

let generation = 0;
let onSignedOut = () => {};

export function whenSignedOut(fn) {
  onSignedOut = fn;
}

export function say(text, kind = 'info') {
  statusLine.textContent = text;
  statusLine.className = kind;
}

/** An API error as the person should read it; a 401 signs out. */
export function problem(err) {
  if (err instanceof ApiError && err.status === 401) {
    clearSession();
    say('Signed out: the management token is missing, invalid or revoked.', 'error');
    onSignedOut();
    return;
  }
  const details = err.violations?.length ? ` (${err.violations.map((v) => `${v.path}: ${v.message}`).join('; ')})` : '';
  say(`${err.code ?? 'ERROR'}: ${err.message}${details}`, 'error');
}

/**
 * Replaces the view; its heading takes the focus, so keyboard and screen-reader users land on it.
 * Returns the view's `live()`: false once another view replaced it.
 */
export function show(title, ...content) {
  const mine = ++generation;
  const heading = h('h2', { id: 'view-title', tabindex: '-1' }, title);
  main.replaceChildren(heading, ...content);
  document.title = `${title} — walgate console`;
  heading.focus();
  return () => mine === generation;
}

/** A view for what cannot be shown (unknown id, unknown environment), with the way back. */
export function notFound(title, text) {
  return show(title, h('p', { class: 'empty' }, text), h('p', {}, h('a', { href: '#/' }, '← All subscriptions')));
}

/**
 * Calls `fn` every `ms` while the view is live: the next call waits for the answer (no pile-up on
 * a slow API) and none goes while the tab is hidden (it resumes when shown).
 */
export function poll(live, fn, ms = 2000) {
  let timer = null;
  let running = null;
  let stopped = false;
  const tick = async () => {
    timer = null;
    if (stopped || !live()) return stop();
    if (document.hidden) return; // visibilitychange resumes
    running = fn().catch((err) => problem(err));
    await running;
    running = null;
    if (!stopped && live() && timer === null) timer = window.setTimeout(tick, ms);
  };
  const onVisible = () => {
    if (stopped || !live()) return stop();
    if (!document.hidden && timer === null) tick();
  };
  function stop() {
    stopped = true;
    window.clearTimeout(timer);
    timer = null;
    document.removeEventListener('visibilitychange', onVisible);
  }
  document.addEventListener('visibilitychange', onVisible);
  timer = window.setTimeout(tick, ms);
  // Stops it and resolves once a poll in flight has answered: a view that is about to delete what
  // it polls asks nothing of it afterwards (a 404 the browser would log as an error).
  return {
    stop: async () => {
      stop();
      await running;
    },
  };
}

/** A modal question; resolves true when confirmed. Esc or Cancel answers no. */
export function ask(question, confirmLabel, danger = false) {
  return new Promise((resolve) => {
    const cancel = h('button', { type: 'button', class: 'secondary', onclick: () => dialog.close('no') }, 'Cancel');
    const confirm = h('button', { type: 'button', class: danger ? 'danger' : '', onclick: () => dialog.close('yes') }, confirmLabel);
    dialog.replaceChildren(
      h('h2', { id: 'dialog-title' }, 'Please confirm'),
      h('p', {}, question),
      h('div', { class: 'actions' }, cancel, confirm),
    );
    dialog.setAttribute('aria-labelledby', 'dialog-title');
    dialog.returnValue = 'no';
    dialog.addEventListener('close', () => resolve(dialog.returnValue === 'yes'), { once: true });
    dialog.showModal();
    cancel.focus();
  });
}
