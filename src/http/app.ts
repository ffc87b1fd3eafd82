import { randomUUID } from 'node:crypto';
import express, { type Router } from 'express';
import { pinoHttp } from 'pino-http';
import type { Context } from '../core/context.js';
import { errorHandler, notFound, requireJsonBody, requireObjectBody } from './error-handler.js';

export interface Mounts {
  /** Routers by mount path, in order. */
  routes: Array<[path: string | string[], router: Router]>;
}

const MAX_BODY = '100kb';

/** Assembles the api: request ids and logs, JSON bodies, the given routers, the error envelope. */
export function createApp(ctx: Context, mounts: Mounts): express.Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  if (ctx.config.trustProxy !== undefined) {
    const v = ctx.config.trustProxy;
    app.set('trust proxy', v === 'true' ? true : v === 'false' ? false : /^\d+$/.test(v) ? Number(v) : v);
  }
  app.use(
    pinoHttp({
      logger: ctx.log,
      genReqId: (req, res) => {
        const given = req.headers['x-request-id'];
        const id = typeof given === 'string' && /^[\w.:-]{1,128}$/.test(given) ? given : randomUUID();
        res.setHeader('X-Request-Id', id);
        return id;
      },
      customLogLevel: (_req, res, err) => (err || res.statusCode >= 500 ? 'error' : 'info'),
      serializers: {
        req: (req: { id: unknown; method: string; url: string }) => ({ id: req.id, method: req.method, url: redactQuery(req.url) }),
        res: (res: { statusCode: number }) => ({ statusCode: res.statusCode }),
      },
    }),
  );
  app.use((req, res, next) => {
    const end = ctx.metrics.httpDuration.startTimer();
    res.on('finish', () => {
      // The route pattern, not the URL: ids in paths must not explode the label set.
      const route = req.route ? `${(res.locals.mount as string | undefined) ?? ''}${String(req.route.path)}` : 'unmatched';
      end({ method: req.method, route, status: String(res.statusCode) });
    });
    next();
  });
  app.use((req, res, next) => {
    // Tokens, user data and errors must not be kept by browsers or proxies; a route whose answer
    // may be cached (the key set) says so itself.
    res.setHeader('Cache-Control', 'no-store');
    res.setHeader('X-Content-Type-Options', 'nosniff');
    // Over HTTPS (directly, or through a proxy that TRUST_PROXY trusts): browsers stay on HTTPS.
    if (req.secure) res.setHeader('Strict-Transport-Security', 'max-age=31536000');
    next();
  });
  app.use(requireJsonBody);
  app.use(express.json({ limit: MAX_BODY, strict: false, type: ['application/json', 'application/*+json'] }));
  app.use(requireObjectBody);
  for (const [path, router] of mounts.routes) {
    // Remember where the router is mounted: Express forgets req.baseUrl before an error reaches the handler.
    app.use(
      path,
      (req, res, next) => {
        res.locals.mount = req.baseUrl;
        next();
      },
      router,
    );
  }
  app.use(notFound);
  app.use(errorHandler(ctx.log));
  return app;
}

/** Query strings may carry tokens (`?token=`); log the path and the parameter names only. */
function redactQuery(url: string): string {
  const q = url.indexOf('?');
  if (q < 0) return url;
  const names = [...new URLSearchParams(url.slice(q + 1)).keys()];
  return `${url.slice(0, q)}?${names.map((n) => `${n}=…`).join('&')}`;
}
