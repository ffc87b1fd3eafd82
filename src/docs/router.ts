import { createRequire } from 'node:module';
import { Router, type Response } from 'express';
import { buildOpenApiDocument } from './openapi.js';
import { ASSET_PREFIX, CONTENT_SECURITY_POLICY, PAGE_HTML, START_SCRIPT } from './page.js';

const require = createRequire(import.meta.url);

/** The files of swagger-ui-dist the page uses, by the name the page asks for. */
const SWAGGER_FILES: Record<string, string> = {
  'swagger-ui.css': require.resolve('swagger-ui-dist/swagger-ui.css'),
  'swagger-ui-bundle.js': require.resolve('swagger-ui-dist/swagger-ui-bundle.js'),
  'favicon.png': require.resolve('swagger-ui-dist/favicon-32x32.png'),
};

function pageHeaders(res: Response): Response {
  return res.set({
    'Content-Security-Policy': CONTENT_SECURITY_POLICY,
    'X-Content-Type-Options': 'nosniff',
    'Referrer-Policy': 'no-referrer',
  });
}

/** GET /openapi.json (the OpenAPI 3.1 document) and GET /docs (the reference page and its assets). */
export function docsRouter(): Router {
  const r = Router();
  // The document depends on nothing but the code: built once, on first use.
  let document: Record<string, unknown> | undefined;
  r.get('/openapi.json', (_req, res) => {
    document ??= buildOpenApiDocument();
    res.set('Cache-Control', 'no-cache').json(document);
  });
  r.get('/docs', (_req, res) => {
    pageHeaders(res).type('html').send(PAGE_HTML);
  });
  r.get(`${ASSET_PREFIX}/start.js`, (_req, res) => {
    pageHeaders(res).type('text/javascript').send(START_SCRIPT);
  });
  r.get(`${ASSET_PREFIX}/:file`, (req, res, next) => {
    const file = SWAGGER_FILES[req.params.file];
    if (!file) return next();
    pageHeaders(res).sendFile(file, { maxAge: '1h' });
  });
  return r;
}
