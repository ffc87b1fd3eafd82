import type { Context } from '../../core/context.js';
import { withTransaction, type Queryable } from '../../core/db/pool.js';
import { AppError } from '../../core/errors.js';
import { decodePageCursor, encodePageCursor } from '../../core/page-cursor.js';
import type { Environment } from '../../projects/environments.js';
import type { EventOrigin } from '../events/append.js';
import { findUserById } from '../users.js';
import * as changes from './changes.js';
import { listOpenInvitations, revokeInvitation } from './invitations.js';
import { requireKnownRole } from './roles.js';
import * as store from './store.js';
import { invitationView, memberView, organizationView } from './view.js';

// Operators' view of an environment's organizations (/api/rest/_organizations and the CLI). An
// operator may do what an owner may; the rules that keep an organization whole (an owner always,
// the limits) are the same (changes.ts), and every change's audit row names the management token.

const PAGE = 50;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export class OrganizationAdminService {
  constructor(private readonly ctx: Context) {}

  async list(env: Environment, q: { cursor?: string }) {
    const cursor = q.cursor ? decodePageCursor(q.cursor, UUID) : undefined;
    const rows = await store.listOrganizations(this.ctx.pool, env, { cursor, limit: PAGE + 1 });
    const page = rows.slice(0, PAGE);
    const last = page.at(-1);
    return {
      organizations: page.map((o) => ({ ...organizationView(o), members: o.members })),
      nextCursor: rows.length > PAGE && last ? encodePageCursor(last) : null,
    };
  }

  async get(env: Environment, id: string) {
    const org = await this.#find(this.ctx.pool, env, id);
    const limit = env.settings.organizations.maxMembers;
    const [members, invitations] = await Promise.all([
      store.listMembers(this.ctx.pool, id, limit),
      listOpenInvitations(this.ctx.pool, id, limit),
    ]);
    const now = this.ctx.clock();
    return {
      organization: organizationView(org),
      members: members.map(memberView),
      invitations: invitations.map((i) => invitationView(i, now)),
    };
  }

  /** A new organization whose first owner is a user of this environment. */
  async create(env: Environment, input: { name: string; ownerId: string }, origin: EventOrigin) {
    const now = this.ctx.clock();
    const org = await withTransaction(this.ctx.pool, async (c) => {
      await this.#user(c, env, input.ownerId);
      return changes.createOrganization(c, env, input.name, input.ownerId, origin, now);
    });
    return { organization: organizationView(org) };
  }

  async rename(env: Environment, id: string, input: { name: string }, origin: EventOrigin) {
    const now = this.ctx.clock();
    return withTransaction(this.ctx.pool, async (c) => {
      const org = await this.#find(c, env, id, true);
      return { organization: organizationView(await changes.renameOrganization(c, env, org, input.name, origin, now)) };
    });
  }

  async delete(env: Environment, id: string, origin: EventOrigin) {
    const now = this.ctx.clock();
    const revoked = await withTransaction(this.ctx.pool, async (c) =>
      changes.deleteOrganization(c, env, await this.#find(c, env, id, true), origin, now, changes.revokeUntil(this.ctx, env, now)),
    );
    await changes.revokeMemberships(this.ctx, env, revoked, now);
  }

  /** Adds a user of this environment directly, without an invitation. */
  async addMember(env: Environment, id: string, input: { userId: string; role: string }, origin: EventOrigin) {
    requireKnownRole(env.settings, input.role);
    const now = this.ctx.clock();
    return withTransaction(this.ctx.pool, async (c) => {
      const org = await this.#find(c, env, id, true);
      await this.#user(c, env, input.userId);
      await changes.addMember(c, env, org, input.userId, input.role, origin, now);
      return { member: memberView((await store.findMember(c, id, input.userId))!) };
    });
  }

  async changeRole(env: Environment, id: string, userId: string, input: { role: string }, origin: EventOrigin) {
    requireKnownRole(env.settings, input.role);
    const now = this.ctx.clock();
    return withTransaction(this.ctx.pool, async (c) => {
      const org = await this.#find(c, env, id, true);
      const member = await this.#member(c, id, userId);
      await changes.changeRole(c, env, org, member, input.role, origin, now);
      return { member: memberView({ ...member, role: input.role }) };
    });
  }

  async removeMember(env: Environment, id: string, userId: string, origin: EventOrigin) {
    const now = this.ctx.clock();
    const revoked = await withTransaction(this.ctx.pool, async (c) => {
      const org = await this.#find(c, env, id, true);
      return changes.removeMember(c, env, org, await this.#member(c, id, userId), origin, now, changes.revokeUntil(this.ctx, env, now));
    });
    await changes.revokeMemberships(this.ctx, env, [revoked], now);
  }

  async invite(env: Environment, id: string, input: { email: string; role: string }, origin: EventOrigin) {
    requireKnownRole(env.settings, input.role);
    const now = this.ctx.clock();
    const invitation = await withTransaction(this.ctx.pool, async (c) => {
      const org = await this.#find(c, env, id, true);
      return changes.sendInvitation(c, this.ctx.secrets, this.ctx.config.publicUrl, env, org, input, origin, now);
    });
    this.ctx.courier.nudge();
    return { invitation: invitationView(invitation, now) };
  }

  async revokeInvitation(env: Environment, id: string, invitationId: string, origin: EventOrigin) {
    const now = this.ctx.clock();
    return withTransaction(this.ctx.pool, async (c) => {
      await this.#find(c, env, id, true);
      const revoked = await revokeInvitation(c, id, invitationId, now);
      if (!revoked) throw new AppError('INVITATION_NOT_FOUND');
      await changes.recordInvitationRevoked(c, env, revoked, origin, now);
      return { invitation: invitationView(revoked, now) };
    });
  }

  async #find(db: Queryable, env: Environment, id: string, lock = false) {
    const org = await store.findOrganization(db, env, id, lock);
    if (!org) throw new AppError('ORGANIZATION_NOT_FOUND', 'No organization with this id in this project and environment.');
    return org;
  }

  async #member(db: Queryable, id: string, userId: string) {
    const member = await store.findMember(db, id, userId);
    if (!member) throw new AppError('ORGANIZATION_MEMBER_NOT_FOUND');
    return member;
  }

  /** A user of this environment (another environment's user id is as unknown as a made-up one). */
  async #user(db: Queryable, env: Environment, userId: string) {
    const user = await findUserById(db, env, userId);
    if (!user) throw new AppError('USER_NOT_FOUND');
    return user;
  }
}
