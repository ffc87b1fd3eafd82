import { Router, type Request } from 'express';
import { clientIp } from '../client-ip.js';
import { handle, refuseOtherMethods, reply } from '../operation.js';
import { authEnvironment } from '../scope.js';
import { parse } from '../validate.js';
import type { EnvironmentCache } from '../../projects/environments.js';
import { authCors } from './cors.js';
import { authApi } from './operations.js';
import { mfaRouter } from './mfa/routes.js';
import { organizationsRouter } from './organizations/routes.js';
import type { AuthService } from '../../auth/service.js';
import { userView } from '../../auth/users.js';
import { discoveryDocument } from '../../auth/issuer.js';
import { AppError } from '../../core/errors.js';
import type { UserAdminService } from '../../auth/users/service.js';

/** The authentication API under /auth: parse, call the service, shape the response. */
export function authRouter(service: AuthService, environments: EnvironmentCache, users: UserAdminService, publicUrl: string): Router {
  const r = Router();
  r.use(authCors(environments));
  const op = authApi.operations;
  const env = (req: Request) => authEnvironment(req, environments);
  const meta = (req: Request) => ({
    ip: clientIp(req),
    clientAddress: req.ip,
    userAgent: req.get('user-agent')?.slice(0, 512) ?? null,
    deviceToken: req.get('x-device-token'),
  });
  const sessions = service.sessions;

  handle(r, op.signup, async (req, res) => {
    const e = await env(req);
    reply(res, op.signup, await service.signup(e, parse(op.signup.body, req.body), meta(req)));
  });
  handle(r, op.confirmSignup, async (req, res) => {
    const e = await env(req);
    reply(res, op.confirmSignup, await service.confirmSignup(e, parse(op.confirmSignup.body, req.body), meta(req)));
  });
  handle(r, op.login, async (req, res) => {
    const e = await env(req);
    reply(res, op.login, await service.login(e, parse(op.login.body, req.body), meta(req)));
  });
  handle(r, op.recoverPassword, async (req, res) => {
    const e = await env(req);
    reply(res, op.recoverPassword, await service.recoverPassword(e, parse(op.recoverPassword.body, req.body), meta(req)));
  });
  handle(r, op.resetPassword, async (req, res) => {
    const e = await env(req);
    reply(res, op.resetPassword, await service.resetPassword(e, parse(op.resetPassword.body, req.body), meta(req)));
  });
  handle(r, op.refreshToken, async (req, res) => {
    const e = await env(req);
    reply(res, op.refreshToken, await sessions.refresh(e, parse(op.refreshToken.body, req.body), meta(req)));
  });
  handle(r, op.resendConfirmation, async (req, res) => {
    const e = await env(req);
    reply(res, op.resendConfirmation, await service.resendConfirmation(e, parse(op.resendConfirmation.body, req.body), meta(req)));
  });
  handle(r, op.logout, async (req, res) => {
    const e = await env(req);
    const { scope } = parse(op.logout.body, req.body ?? {});
    reply(res, op.logout, await sessions.logout(e, req.get('authorization'), scope, meta(req)));
  });
  handle(r, op.me, async (req, res) => {
    const e = await env(req);
    reply(res, op.me, await sessions.me(e, req.get('authorization')));
  });
  handle(r, op.sessions, async (req, res) => {
    const e = await env(req);
    reply(res, op.sessions, await sessions.list(e, req.get('authorization')));
  });
  handle(r, op.endSession, async (req, res) => {
    const e = await env(req);
    const { id } = parse(op.endSession.params, req.params);
    reply(res, op.endSession, await sessions.end(e, req.get('authorization'), id, meta(req)));
  });
  handle(r, op.updateMe, async (req, res) => {
    const e = await env(req);
    const { userMetadata } = parse(op.updateMe.body, req.body);
    const claims = await service.authenticate(e, req.get('authorization'));
    const actor = await sessions.operatorOf(claims);
    const user = await users.setUserMetadata(e, claims.sub, userMetadata, { ...meta(req), actor });
    service.forgetProfile(claims.sid);
    reply(res, op.updateMe, { user: userView(user) });
  });
  handle(r, op.jwks, async (req, res) => {
    const q = parse(op.jwks.query, req.query);
    if (q.projectId) {
      req.headers['x-project-id'] = q.projectId;
      if (q.environment) req.headers.environment = q.environment;
    }
    const e = await env(req);
    res.set('Cache-Control', 'public, max-age=300');
    // Public keys: any page may read them, whatever the environment's origins.
    res.set('Access-Control-Allow-Origin', '*');
    reply(res, op.jwks, await service.jwks(e));
  });

  handle(r, op.openidConfiguration, async (req, res) => {
    const { projectId, environment } = parse(op.openidConfiguration.params, req.params);
    const e = await environments.get(projectId, environment);
    if (!e || !e.authEnabled) throw new AppError('AUTH_NOT_CONFIGURED');
    res.set('Cache-Control', 'public, max-age=300');
    res.set('Access-Control-Allow-Origin', '*');
    reply(res, op.openidConfiguration, discoveryDocument(publicUrl, e));
  });
  // Second factors and passkeys (/auth/mfa/*, /auth/passkeys/*): their own operation group.
  r.use(mfaRouter(service.mfa, environments));
  // Organizations, members and invitations (/auth/organizations/*): their own operation group.
  r.use(organizationsRouter(service.organizations, environments));

  refuseOtherMethods(r, authApi);
  return r;
}
