import { Router, type Request } from 'express';
import type { Context } from '../../core/context.js';
import type { EnvironmentCache } from '../../projects/environments.js';
import type { UserAdminService } from '../../auth/users/service.js';
import type { ImpersonationService } from '../../auth/users/impersonate.js';
import { AppError } from '../../core/errors.js';
import { handle, refuseOtherMethods, reply } from '../operation.js';
import { parse } from '../validate.js';
import { managementScope } from '../webhooks/access.js';
import { authEventsApi, usersApi } from './operations.js';

/** Who acted, for the audit trail: the management token and the client. */
function origin(req: Request, tokenId: string) {
  return { actor: tokenId, clientAddress: req.ip ?? null, userAgent: req.get('user-agent') ?? null };
}

const times = (q: { since?: string; until?: string }) => ({
  since: q.since ? new Date(q.since) : undefined,
  until: q.until ? new Date(q.until) : undefined,
});

/** The admin API for end users: /api/rest/_users (and /gw/…). */
export function usersRouter(
  ctx: Context,
  service: UserAdminService,
  environments: EnvironmentCache,
  impersonation?: ImpersonationService,
): Router {
  const r = Router();
  const op = usersApi.operations;
  const scope = (req: Request) => managementScope(ctx, environments, req);

  handle(r, op.listUsers, async (req, res) => {
    const { env } = await scope(req);
    reply(res, op.listUsers, await service.list(env, parse(op.listUsers.query, req.query)));
  });
  handle(r, op.createUser, async (req, res) => {
    const { env, tokenId } = await scope(req);
    reply(res, op.createUser, await service.create(env, parse(op.createUser.body, req.body), origin(req, tokenId)));
  });
  handle(r, op.getUser, async (req, res) => {
    const { env } = await scope(req);
    reply(res, op.getUser, await service.get(env, parse(op.getUser.params, req.params).id));
  });
  handle(r, op.updateUser, async (req, res) => {
    const { env, tokenId } = await scope(req);
    const { id } = parse(op.updateUser.params, req.params);
    reply(res, op.updateUser, await service.update(env, id, parse(op.updateUser.body, req.body), origin(req, tokenId)));
  });
  handle(r, op.deleteUser, async (req, res) => {
    const { env, tokenId } = await scope(req);
    await service.delete(env, parse(op.deleteUser.params, req.params).id, origin(req, tokenId));
    reply(res, op.deleteUser);
  });
  handle(r, op.logoutUser, async (req, res) => {
    const { env, tokenId } = await scope(req);
    reply(res, op.logoutUser, await service.logout(env, parse(op.logoutUser.params, req.params).id, origin(req, tokenId)));
  });
  handle(r, op.removeUserFactor, async (req, res) => {
    const { env, tokenId } = await scope(req);
    const { id, factorId } = parse(op.removeUserFactor.params, req.params);
    await service.removeFactor(env, id, factorId, origin(req, tokenId));
    reply(res, op.removeUserFactor);
  });
  handle(r, op.impersonateUser, async (req, res) => {
    const { env, tokenId } = await scope(req);
    const { id } = parse(op.impersonateUser.params, req.params);
    const input = parse(op.impersonateUser.body, req.body ?? {});
    if (!impersonation) throw new AppError('NOT_FOUND');
    reply(res, op.impersonateUser, await impersonation.start(env, id, input, origin(req, tokenId)));
  });
  handle(r, op.listUserEvents, async (req, res) => {
    const { env } = await scope(req);
    const { id } = parse(op.listUserEvents.params, req.params);
    const q = parse(op.listUserEvents.query, req.query);
    reply(res, op.listUserEvents, await service.userEvents(env, id, { type: q.type, cursor: q.cursor, ...times(q) }));
  });

  refuseOtherMethods(r, usersApi);
  return r;
}

/** The environment's audit trail: /api/rest/_auth-events (and /gw/…). */
export function authEventsRouter(ctx: Context, service: UserAdminService, environments: EnvironmentCache): Router {
  const r = Router();
  const op = authEventsApi.operations;
  handle(r, op.listAuthEvents, async (req, res) => {
    const { env } = await managementScope(ctx, environments, req);
    const q = parse(op.listAuthEvents.query, req.query);
    reply(res, op.listAuthEvents, await service.events(env, { type: q.type, cursor: q.cursor, ...times(q) }));
  });
  refuseOtherMethods(r, authEventsApi);
  return r;
}
