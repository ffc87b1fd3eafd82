import { fileURLToPath } from 'node:url';
import { Router, type Response } from 'express';

// The delivery console at /console: a static page and hand-written ES modules (console/ at the
// repository's root, no build step), which call the management API from the browser with the
// token the person signs in with. The api holds no console state and sees no other credential.

const ASSETS_DIR = fileURLToPath(new URL('../../../../console/', import.meta.url));

/** The files the page loads, by name: nothing else under console/ is served. */
const ASSETS = new Set(['app.js', 'api.js', 'dom.js', 'chart.js', 'console.css', 'users.js']);

/** Only what the page loads from walgate itself; no inline script or style, no other origin. */
export const CONSOLE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

function pageHeaders(res: Response): Response {
  return res.set({
    'Content-Security-Policy': CONSOLE_CSP,
    'X-Content-Type-Options': 'nosniff',
    'Referrer-Policy': 'no-referrer',
    // Always the current page and modules: they change together with the api.
    'Cache-Control': 'no-cache',
  });
}

export function consoleRouter(): Router {
  const r = Router();
  r.get('/console', (_req, res) => {
    pageHeaders(res).sendFile('index.html', { root: ASSETS_DIR, cacheControl: false });
  });
  r.get('/console/assets/:file', (req, res, next) => {
    if (!ASSETS.has(req.params.file)) return next();
    pageHeaders(res).sendFile(req.params.file, { root: ASSETS_DIR, cacheControl: false });
  });
  return r;
}
