import { Router, type Request } from 'express';
import type { ProviderService } from '../../../auth/providers/service.js';
import type { EnvironmentCache } from '../../../projects/environments.js';
import { clientIp } from '../../client-ip.js';
import { handle, refuseOtherMethods, reply } from '../../operation.js';
import { authEnvironment } from '../../scope.js';
import { parse } from '../../validate.js';
import { providersApi } from './operations.js';

/** Provider sign-in and identities under /auth: parse, call the service, shape the response. */
export function providersRouter(service: ProviderService, environments: EnvironmentCache): Router {
  const r = Router();
  const op = providersApi.operations;
  const env = (req: Request) => authEnvironment(req, environments);
  const meta = (req: Request) => ({ ip: clientIp(req), clientAddress: req.ip, userAgent: req.get('user-agent')?.slice(0, 512) ?? null });

  handle(r, op.providerAuthorize, async (req, res) => {
    const { id } = parse(op.providerAuthorize.params, req.params);
    const q = parse(op.providerAuthorize.query, req.query);
    // A navigation sends no custom headers: the scope comes from the query, like the JWKS's.
    req.headers['x-project-id'] = q.projectId;
    if (q.environment) req.headers.environment = q.environment;
    else delete req.headers.environment;
    const e = await env(req);
    const location = await service.authorize(e, id, { redirectTo: q.redirect_to, codeChallenge: q.code_challenge }, meta(req));
    res.set('Cache-Control', 'no-store');
    res.status(op.providerAuthorize.success.status).location(location).end();
  });
  handle(r, op.providerCallback, async (req, res) => {
    const { id } = parse(op.providerCallback.params, req.params);
    parse(op.providerCallback.query, req.query);
    // The query exactly as the provider sent it: openid-client reads code, state and iss from it.
    const query = new URL(req.originalUrl, 'http://callback.invalid').searchParams;
    const location = await service.callback(id, query, meta(req));
    res.set('Cache-Control', 'no-store');
    // The one-time code must not leak to third parties through the landing page's Referer.
    res.set('Referrer-Policy', 'no-referrer');
    res.status(op.providerCallback.success.status).location(location).end();
  });
  handle(r, op.providerToken, async (req, res) => {
    const e = await env(req);
    reply(res, op.providerToken, await service.exchange(e, parse(op.providerToken.body, req.body), meta(req)));
  });
  handle(r, op.identities, async (req, res) => {
    const e = await env(req);
    reply(res, op.identities, await service.identities(e, req.get('authorization')));
  });
  handle(r, op.unlinkIdentity, async (req, res) => {
    const e = await env(req);
    const { id } = parse(op.unlinkIdentity.params, req.params);
    await service.unlink(e, req.get('authorization'), id, meta(req));
    reply(res, op.unlinkIdentity);
  });

  refuseOtherMethods(r, providersApi);
  return r;
}
