import { Router, type Request } from 'express';
import type { OrganizationAdminService } from '../../auth/organizations/admin.js';
import type { Context } from '../../core/context.js';
import type { EnvironmentCache } from '../../projects/environments.js';
import { handle, refuseOtherMethods, reply } from '../operation.js';
import { parse } from '../validate.js';
import { managementScope } from '../webhooks/access.js';
import { organizationsAdminApi } from './operations.js';

/** Who acted, for the audit trail: the management token and the client. */
function origin(req: Request, tokenId: string) {
  return { actor: tokenId, clientAddress: req.ip ?? null, userAgent: req.get('user-agent') ?? null };
}

/** Operators' API for organizations: /api/rest/_organizations (and /gw/…). */
export function organizationsAdminRouter(ctx: Context, service: OrganizationAdminService, environments: EnvironmentCache): Router {
  const r = Router();
  const op = organizationsAdminApi.operations;
  // A body is parsed before the path: its violations are what a client fixes first.
  const scope = (req: Request) => managementScope(ctx, environments, req);

  handle(r, op.adminListOrganizations, async (req, res) => {
    const { env } = await scope(req);
    reply(res, op.adminListOrganizations, await service.list(env, parse(op.adminListOrganizations.query, req.query)));
  });
  handle(r, op.adminCreateOrganization, async (req, res) => {
    const { env, tokenId } = await scope(req);
    reply(
      res,
      op.adminCreateOrganization,
      await service.create(env, parse(op.adminCreateOrganization.body, req.body), origin(req, tokenId)),
    );
  });
  handle(r, op.adminGetOrganization, async (req, res) => {
    const { env } = await scope(req);
    reply(res, op.adminGetOrganization, await service.get(env, parse(op.adminGetOrganization.params, req.params).id));
  });
  handle(r, op.adminRenameOrganization, async (req, res) => {
    const { env, tokenId } = await scope(req);
    const input = parse(op.adminRenameOrganization.body, req.body);
    const { id } = parse(op.adminRenameOrganization.params, req.params);
    reply(res, op.adminRenameOrganization, await service.rename(env, id, input, origin(req, tokenId)));
  });
  handle(r, op.adminDeleteOrganization, async (req, res) => {
    const { env, tokenId } = await scope(req);
    await service.delete(env, parse(op.adminDeleteOrganization.params, req.params).id, origin(req, tokenId));
    reply(res, op.adminDeleteOrganization);
  });
  handle(r, op.adminAddMember, async (req, res) => {
    const { env, tokenId } = await scope(req);
    const input = parse(op.adminAddMember.body, req.body);
    const { id } = parse(op.adminAddMember.params, req.params);
    reply(res, op.adminAddMember, await service.addMember(env, id, input, origin(req, tokenId)));
  });
  handle(r, op.adminChangeMemberRole, async (req, res) => {
    const { env, tokenId } = await scope(req);
    const input = parse(op.adminChangeMemberRole.body, req.body);
    const { id, userId } = parse(op.adminChangeMemberRole.params, req.params);
    reply(res, op.adminChangeMemberRole, await service.changeRole(env, id, userId, input, origin(req, tokenId)));
  });
  handle(r, op.adminRemoveMember, async (req, res) => {
    const { env, tokenId } = await scope(req);
    const { id, userId } = parse(op.adminRemoveMember.params, req.params);
    await service.removeMember(env, id, userId, origin(req, tokenId));
    reply(res, op.adminRemoveMember);
  });
  handle(r, op.adminInviteMember, async (req, res) => {
    const { env, tokenId } = await scope(req);
    const input = parse(op.adminInviteMember.body, req.body);
    const { id } = parse(op.adminInviteMember.params, req.params);
    reply(res, op.adminInviteMember, await service.invite(env, id, input, origin(req, tokenId)));
  });
  handle(r, op.adminRevokeInvitation, async (req, res) => {
    const { env, tokenId } = await scope(req);
    const { id, invitationId } = parse(op.adminRevokeInvitation.params, req.params);
    reply(res, op.adminRevokeInvitation, await service.revokeInvitation(env, id, invitationId, origin(req, tokenId)));
  });

  refuseOtherMethods(r, organizationsAdminApi);
  return r;
}
