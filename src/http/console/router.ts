import { fileURLToPath } from 'node:url';
import { Router, type NextFunction, type Request, type Response } from 'express';

// The delivery console at /console: a static page and hand-written ES modules (console/ at the
// repository's root, no build step), which call the management API from the browser with the
// token the person signs in with. The api holds no console state and sees no other credential.

const ASSETS_DIR = fileURLToPath(new URL('../../../../console/', import.meta.url));

/**
 * What the page may load: scripts and the style sheet of console/ and its views/, by a plain name
 * (no dot segment can climb out). A view added under views/ is served without a change here.
 */
const ASSET_NAME = /^[a-z][a-z0-9-]*\.(?:js|css)$/;

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
  const asset = (dir: string) => (req: Request<{ file: string }>, res: Response, next: NextFunction) => {
    if (!ASSET_NAME.test(req.params.file)) return next();
    // A plain name that is not there is a 404 like any unknown route (next, not an error).
    pageHeaders(res).sendFile(`${dir}${req.params.file}`, { root: ASSETS_DIR, cacheControl: false }, (err) => (err ? next() : undefined));
  };
  r.get('/console/assets/:file', asset(''));
  r.get('/console/assets/views/:file', asset('views/'));
  return r;
}
