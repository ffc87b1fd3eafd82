import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { DEFAULT_ENVIRONMENT, isValidName, type EnvironmentCache } from '../../projects/environments.js';

// CORS for the auth API, per environment (setting `corsOrigins`). A preflight names no project
// (browsers send no custom headers with it), so it is answered for an origin that the named
// environment (`?projectId=&environment=`) or, without one, any environment allows; the real
// request then carries `Access-Control-Allow-Origin` only if its own environment allows the
// origin, so a browser shows one project's answers only to that project's origins. Tokens travel
// in the Authorization header, never in cookies: credentials are never allowed.

const ALLOWED_HEADERS = 'Authorization, Content-Type, X-Project-Id, environment, X-Device-Token, X-Request-Id';
const EXPOSED_HEADERS = 'Retry-After, X-Request-Id, WWW-Authenticate';
const METHODS = 'GET, POST, PATCH, DELETE';

export function authCors(environments: EnvironmentCache): RequestHandler {
  return (req: Request, res: Response, next: NextFunction) => {
    const origin = req.get('origin');
    if (!origin) return next();
    res.vary('Origin');
    const preflight = req.method === 'OPTIONS' && req.get('access-control-request-method') !== undefined;
    allowedFor(environments, req, preflight)
      .then((allowed) => {
        const answer = allowed.has('*') ? '*' : allowed.has(origin) ? origin : undefined;
        if (answer) {
          res.set('Access-Control-Allow-Origin', answer);
          res.set('Access-Control-Expose-Headers', EXPOSED_HEADERS);
        }
        if (!preflight) return next();
        if (answer) {
          res.set('Access-Control-Allow-Methods', METHODS);
          res.set('Access-Control-Allow-Headers', ALLOWED_HEADERS);
          res.set('Access-Control-Max-Age', '600');
        }
        res.status(204).end();
      })
      .catch(next);
  };
}

/** The origins that may read this request's answer. */
async function allowedFor(environments: EnvironmentCache, req: Request, preflight: boolean): Promise<Set<string>> {
  const fromQuery = typeof req.query.projectId === 'string' ? req.query.projectId : undefined;
  const projectId = preflight ? fromQuery : (req.get('x-project-id') ?? fromQuery);
  if (!projectId) return preflight ? environments.originsInUse() : new Set();
  const named = preflight ? req.query.environment : (req.get('environment') ?? req.query.environment);
  const name = typeof named === 'string' ? named : DEFAULT_ENVIRONMENT;
  if (!isValidName(projectId) || !isValidName(name)) return new Set();
  const env = await environments.get(projectId, name);
  return new Set(env?.settings.corsOrigins ?? []);
}
