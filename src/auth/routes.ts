import { Router, type Request } from 'express';
import { z } from 'zod';
import { clientIp } from '../http/client-ip.js';
import { AppError } from '../http/errors.js';
import { authEnvironment } from '../http/scope.js';
import { parse } from '../http/validate.js';
import type { EnvironmentCache } from '../projects/environments.js';
import * as body from './schemas.js';
import type { AuthService } from './service.js';

/** The authentication API under /auth: parse, call the service, shape the response. */
export function authRouter(service: AuthService, environments: EnvironmentCache): Router {
  const r = Router();
  const env = (req: Request) => authEnvironment(req, environments);
  const meta = (req: Request) => ({ ip: clientIp(req) });

  r.post('/signup', async (req, res) => {
    const e = await env(req);
    res.status(201).json(await service.signup(e, parse(body.signupBody, req.body), meta(req)));
  });
  r.post('/confirm-signup', async (req, res) => {
    const e = await env(req);
    res.json(await service.confirmSignup(e, parse(body.confirmSignupBody, req.body)));
  });
  r.post('/login', async (req, res) => {
    const e = await env(req);
    res.json(await service.login(e, parse(body.loginBody, req.body), meta(req)));
  });
  r.post('/recover-password', async (req, res) => {
    const e = await env(req);
    res.json(await service.recoverPassword(e, parse(body.recoverPasswordBody, req.body)));
  });
  r.post('/reset-password', async (req, res) => {
    const e = await env(req);
    res.json(await service.resetPassword(e, parse(body.resetPasswordBody, req.body)));
  });
  r.post('/refresh-token', async (req, res) => {
    const e = await env(req);
    res.json(await service.refresh(e, parse(body.refreshTokenBody, req.body)));
  });
  r.post('/logout', async (req, res) => {
    const e = await env(req);
    res.json(await service.logout(e, req.get('authorization')));
  });
  r.get('/me', async (req, res) => {
    const e = await env(req);
    res.json(await service.me(e, req.get('authorization')));
  });

  // Clients that cannot send headers (a JWKS URL in a verifier's config) name the project in the query.
  const jwksQuery = z.object({ projectId: z.string().optional(), environment: z.string().optional() });
  r.get('/.well-known/jwks.json', async (req, res) => {
    const q = parse(jwksQuery, req.query);
    if (q.projectId) {
      req.headers['x-project-id'] = q.projectId;
      if (q.environment) req.headers.environment = q.environment;
    }
    const e = await env(req);
    res.set('Cache-Control', 'public, max-age=300').json(await service.jwks(e));
  });

  r.all(['/signup', '/confirm-signup', '/login', '/recover-password', '/reset-password', '/refresh-token', '/logout', '/me', '/.well-known/jwks.json'], () => {
    throw new AppError('METHOD_NOT_ALLOWED');
  });
  return r;
}
