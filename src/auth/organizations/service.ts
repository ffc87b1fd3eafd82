import type { Context } from '../../core/context.js';
import { withTransaction, type Queryable } from '../../core/db/pool.js';
import { hashToken } from '../../core/crypto/tokens.js';
import { AppError } from '../../core/errors.js';
import type { Environment } from '../../projects/environments.js';
import type { EventOrigin } from '../events/append.js';
import type { SessionService } from '../sessions/service.js';
import type { AccessClaims } from '../tokens.js';
import { findUserById } from '../users.js';
import * as changes from './changes.js';
import { findInvitationByToken, listOpenInvitations, markAccepted, revokeInvitation } from './invitations.js';
import { may, permissionsOf, requireKnownRole, requireMay, requireMayGrant, requireMayRemove } from './roles.js';
import * as store from './store.js';
import { invitationView, memberView, organizationView } from './view.js';

// Organizations as their members live them (the /auth routes and their GraphQL twins). Who may do
// what is decided from the membership as it stands in the database, never from a token's claims;
// a user who is not a member sees no organization at all (404), except when switching to it (403).

export class OrganizationService {
  constructor(
    private readonly ctx: Context,
    private readonly sessions: SessionService,
  ) {}

  async create(env: Environment, authorization: string | undefined, input: { name: string }, client: EventOrigin) {
    const claims = await this.sessions.authenticate(env, authorization);
    const by = await actor(this.sessions, claims, client);
    const now = this.ctx.clock();
    const organization = await withTransaction(this.ctx.pool, (c) => changes.createOrganization(c, env, input.name, claims.sub, by, now));
    return { organization: organizationView(organization, 'owner') };
  }

  /** The caller's organizations, with their role in each. */
  async list(env: Environment, authorization: string | undefined) {
    const claims = await this.sessions.authenticate(env, authorization);
    const rows = await store.listUserOrganizations(this.ctx.pool, env, claims.sub, env.settings.organizations.maxOrganizationsPerUser);
    return { organizations: rows.map((o) => organizationView(o, o.role)) };
  }

  /** One of the caller's organizations, its members, and (for owners and admins) its open invitations. */
  async get(env: Environment, authorization: string | undefined, id: string) {
    const claims = await this.sessions.authenticate(env, authorization);
    const { org, me } = await this.#membership(this.ctx.pool, env, id, claims.sub);
    const limit = env.settings.organizations.maxMembers;
    const [members, invitations] = await Promise.all([
      store.listMembers(this.ctx.pool, id, limit),
      may(me.role, 'invite') ? listOpenInvitations(this.ctx.pool, id, limit) : Promise.resolve([]),
    ]);
    const now = this.ctx.clock();
    return {
      organization: organizationView(org, me.role),
      members: members.map(memberView),
      invitations: invitations.map((i) => invitationView(i, now)),
    };
  }

  async rename(env: Environment, authorization: string | undefined, id: string, input: { name: string }, client: EventOrigin) {
    const claims = await this.sessions.authenticate(env, authorization);
    const by = await actor(this.sessions, claims, client);
    const now = this.ctx.clock();
    return withTransaction(this.ctx.pool, async (c) => {
      const { org, me } = await this.#membership(c, env, id, claims.sub, true);
      requireMay(me.role, 'update');
      return {
        organization: organizationView(await changes.renameOrganization(c, env, org, input.name, by, now), me.role),
      };
    });
  }

  /** Owners only; every member's tokens that carry it are refused from the next request. */
  async delete(env: Environment, authorization: string | undefined, id: string, client: EventOrigin) {
    const claims = await this.sessions.authenticate(env, authorization);
    const by = await actor(this.sessions, claims, client);
    const now = this.ctx.clock();
    const revoked = await withTransaction(this.ctx.pool, async (c) => {
      const { org, me } = await this.#membership(c, env, id, claims.sub, true);
      requireMay(me.role, 'delete');
      return changes.deleteOrganization(c, env, org, by, now, changes.revokeUntil(this.ctx, env, now));
    });
    await changes.revokeMemberships(this.ctx, env, revoked, now);
  }

  async invite(
    env: Environment,
    authorization: string | undefined,
    id: string,
    input: { email: string; role: string },
    client: EventOrigin,
  ) {
    const claims = await this.sessions.authenticate(env, authorization);
    const by = await actor(this.sessions, claims, client);
    requireKnownRole(env.settings, input.role);
    const now = this.ctx.clock();
    const invitation = await withTransaction(this.ctx.pool, async (c) => {
      const { org, me } = await this.#membership(c, env, id, claims.sub, true);
      requireMay(me.role, 'invite');
      requireMayGrant(me.role, input.role);
      return changes.sendInvitation(c, this.ctx.secrets, this.ctx.config.publicUrl, env, org, input, by, now);
    });
    this.ctx.courier.nudge();
    return { invitation: invitationView(invitation, now) };
  }

  async revokeInvitation(env: Environment, authorization: string | undefined, id: string, invitationId: string, client: EventOrigin) {
    const claims = await this.sessions.authenticate(env, authorization);
    const by = await actor(this.sessions, claims, client);
    const now = this.ctx.clock();
    return withTransaction(this.ctx.pool, async (c) => {
      const { me } = await this.#membership(c, env, id, claims.sub, true);
      requireMay(me.role, 'invite');
      const revoked = await revokeInvitation(c, id, invitationId, now);
      if (!revoked) throw new AppError('INVITATION_NOT_FOUND');
      await changes.recordInvitationRevoked(c, env, revoked, by, now);
      return { invitation: invitationView(revoked, now) };
    });
  }

  /**
   * Joins the organization of the invitation, once: only the user whose verified address it was
   * sent to, before it expires, unless it was revoked. Every other case is one answer, so a token
   * says nothing to someone it was not meant for.
   */
  async accept(env: Environment, authorization: string | undefined, input: { token: string }, client: EventOrigin) {
    const claims = await this.sessions.authenticate(env, authorization);
    const by = await actor(this.sessions, claims, client);
    const now = this.ctx.clock();
    return withTransaction(this.ctx.pool, async (c) => {
      const user = await findUserById(c, env, claims.sub);
      if (!user) throw new AppError('AUTH_TOKEN_INVALID');
      const invitation = await findInvitationByToken(c, env, hashToken(input.token));
      const usable = invitation && !invitation.acceptedAt && !invitation.revokedAt && invitation.expiresAt > now;
      if (!usable || invitation.email !== user.email) throw new AppError('INVITATION_INVALID');
      if (!user.emailVerifiedAt) throw new AppError('AUTH_EMAIL_NOT_VERIFIED');
      // The environment may have dropped the role since: the invitation cannot grant it any more.
      if (!permissionsOf(env.settings, invitation.role))
        throw new AppError('INVITATION_INVALID', 'The role of this invitation no longer exists.');
      const org = await store.findOrganization(c, env, invitation.organizationId, true);
      if (!org) throw new AppError('INVITATION_INVALID');
      const who = by;
      await markAccepted(c, invitation.id, user.id, now);
      await changes.recordInvitationAccepted(c, env, invitation, who, now);
      await changes.addMember(c, env, org, user.id, invitation.role, who, now, { invitationId: invitation.id });
      return { organization: organizationView(org, invitation.role) };
    });
  }

  async changeRole(
    env: Environment,
    authorization: string | undefined,
    id: string,
    userId: string,
    input: { role: string },
    client: EventOrigin,
  ) {
    const claims = await this.sessions.authenticate(env, authorization);
    const by = await actor(this.sessions, claims, client);
    requireKnownRole(env.settings, input.role);
    const now = this.ctx.clock();
    return withTransaction(this.ctx.pool, async (c) => {
      const { org, me } = await this.#membership(c, env, id, claims.sub, true);
      requireMay(me.role, 'manageMembers');
      const member = await this.#member(c, id, userId);
      requireMayGrant(me.role, input.role, member.role);
      await changes.changeRole(c, env, org, member, input.role, by, now);
      return { member: memberView({ ...member, role: input.role }) };
    });
  }

  /** Removes a member, or the caller leaves (their own user id); the member's tokens that carry it stop at once. */
  async removeMember(env: Environment, authorization: string | undefined, id: string, userId: string, client: EventOrigin) {
    const claims = await this.sessions.authenticate(env, authorization);
    const by = await actor(this.sessions, claims, client);
    const now = this.ctx.clock();
    const revoked = await withTransaction(this.ctx.pool, async (c) => {
      const { org, me } = await this.#membership(c, env, id, claims.sub, true);
      const member = userId === claims.sub ? me : await this.#member(c, id, userId);
      requireMayRemove(me.role, member.role, userId === claims.sub);
      return changes.removeMember(c, env, org, member, by, now, changes.revokeUntil(this.ctx, env, now));
    });
    await changes.revokeMemberships(this.ctx, env, [revoked], now);
  }

  /**
   * A new token pair of the caller's session acting for the organization (null: for none): its
   * access token carries `org_id`, `org_role` and `org_permissions`, and so do the session's
   * refreshes while the membership lasts. Not a member: 403.
   */
  async switchActive(env: Environment, authorization: string | undefined, input: { organizationId: string | null }) {
    const claims = await this.sessions.authenticate(env, authorization);
    const now = this.ctx.clock();
    return this.sessions.switchOrganization(env, claims, now, async (c) => {
      if (!input.organizationId) return undefined;
      // Locked for share: a removal that commits meanwhile waits, then revokes the membership
      // named here; other members switching at the same moment do not wait for each other.
      const org = await store.findOrganization(c, env, input.organizationId, 'share');
      const me = org && (await store.findMember(c, org.id, claims.sub));
      if (!org || !me) throw new AppError('ORGANIZATION_FORBIDDEN', 'You are not a member of this organization.');
      return { id: org.id, role: me.role, permissions: permissionsOf(env.settings, me.role) ?? [], membershipId: me.id };
    });
  }

  /** The organization and the caller's membership; 404 for anyone who is not a member (it does not exist for them). */
  async #membership(db: Queryable, env: Environment, id: string, userId: string, lock = false) {
    const org = await store.findOrganization(db, env, id, lock);
    const me = org && (await store.findMember(db, id, userId));
    if (!org || !me) throw new AppError('ORGANIZATION_NOT_FOUND');
    return { org, me };
  }

  async #member(db: Queryable, id: string, userId: string) {
    const member = await store.findMember(db, id, userId);
    if (!member) throw new AppError('ORGANIZATION_MEMBER_NOT_FOUND');
    return member;
  }
}

/** Who acts: the user, and in an impersonation session also the operator's management token. */
async function actor(sessions: SessionService, claims: AccessClaims, client: EventOrigin): Promise<changes.Actor> {
  const operator = await sessions.operatorOf(claims);
  return { userId: claims.sub, actor: operator, clientAddress: client.clientAddress ?? null, userAgent: client.userAgent ?? null };
}
