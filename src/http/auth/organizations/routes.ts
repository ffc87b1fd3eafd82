import { Router, type Request } from 'express';
import type { OrganizationService } from '../../../auth/organizations/service.js';
import type { EnvironmentCache } from '../../../projects/environments.js';
import { handle, refuseOtherMethods, reply } from '../../operation.js';
import { authEnvironment } from '../../scope.js';
import { parse } from '../../validate.js';
import { organizationsApi } from './operations.js';

/** Organizations under /auth: parse, call the service, shape the response. */
export function organizationsRouter(organizations: OrganizationService, environments: EnvironmentCache): Router {
  const r = Router();
  const op = organizationsApi.operations;
  // A body is parsed before the path: its violations are what a client fixes first.
  const env = (req: Request) => authEnvironment(req, environments);
  const auth = (req: Request) => req.get('authorization');
  const client = (req: Request) => ({ clientAddress: req.ip ?? null, userAgent: req.get('user-agent')?.slice(0, 512) ?? null });

  handle(r, op.createOrganization, async (req, res) => {
    const e = await env(req);
    reply(res, op.createOrganization, await organizations.create(e, auth(req), parse(op.createOrganization.body, req.body), client(req)));
  });
  handle(r, op.listOrganizations, async (req, res) => {
    const e = await env(req);
    reply(res, op.listOrganizations, await organizations.list(e, auth(req)));
  });
  handle(r, op.acceptInvitation, async (req, res) => {
    const e = await env(req);
    reply(res, op.acceptInvitation, await organizations.accept(e, auth(req), parse(op.acceptInvitation.body, req.body), client(req)));
  });
  handle(r, op.switchOrganization, async (req, res) => {
    const e = await env(req);
    reply(res, op.switchOrganization, await organizations.switchActive(e, auth(req), parse(op.switchOrganization.body, req.body)));
  });
  handle(r, op.getOrganization, async (req, res) => {
    const e = await env(req);
    reply(res, op.getOrganization, await organizations.get(e, auth(req), parse(op.getOrganization.params, req.params).id));
  });
  handle(r, op.renameOrganization, async (req, res) => {
    const e = await env(req);
    const input = parse(op.renameOrganization.body, req.body);
    const { id } = parse(op.renameOrganization.params, req.params);
    reply(res, op.renameOrganization, await organizations.rename(e, auth(req), id, input, client(req)));
  });
  handle(r, op.deleteOrganization, async (req, res) => {
    const e = await env(req);
    await organizations.delete(e, auth(req), parse(op.deleteOrganization.params, req.params).id, client(req));
    reply(res, op.deleteOrganization);
  });
  handle(r, op.inviteMember, async (req, res) => {
    const e = await env(req);
    const input = parse(op.inviteMember.body, req.body);
    const { id } = parse(op.inviteMember.params, req.params);
    reply(res, op.inviteMember, await organizations.invite(e, auth(req), id, input, client(req)));
  });
  handle(r, op.revokeInvitation, async (req, res) => {
    const e = await env(req);
    const { id, invitationId } = parse(op.revokeInvitation.params, req.params);
    reply(res, op.revokeInvitation, await organizations.revokeInvitation(e, auth(req), id, invitationId, client(req)));
  });
  handle(r, op.changeMemberRole, async (req, res) => {
    const e = await env(req);
    const input = parse(op.changeMemberRole.body, req.body);
    const { id, userId } = parse(op.changeMemberRole.params, req.params);
    reply(res, op.changeMemberRole, await organizations.changeRole(e, auth(req), id, userId, input, client(req)));
  });
  handle(r, op.removeMember, async (req, res) => {
    const e = await env(req);
    const { id, userId } = parse(op.removeMember.params, req.params);
    await organizations.removeMember(e, auth(req), id, userId, client(req));
    reply(res, op.removeMember);
  });

  refuseOtherMethods(r, organizationsApi);
  return r;
}
