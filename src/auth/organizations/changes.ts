import { publishCacheEvent } from '../../core/cache-events.js';
import type { Context } from '../../core/context.js';
import type { SecretBox } from '../../core/crypto/secretbox.js';
import { hashToken, randomToken } from '../../core/crypto/tokens.js';
import type { Queryable } from '../../core/db/pool.js';
import { AppError, rateLimited } from '../../core/errors.js';
import { enqueueMail } from '../../core/mail/outbox.js';
import type { Environment } from '../../projects/environments.js';
import { append, type EventOrigin } from '../events/append.js';
import { AUTH_EVENT, type AuthEventType } from '../events/kinds.js';
import { leaveActiveOrganization } from '../sessions/store.js';
import { insertInvitation, countInvitationsSince, type Invitation } from './invitations.js';
import { invitationLink, invitationMail } from './mail.js';
import { OWNER } from './roles.js';
import * as store from './store.js';

// The state changes of organizations, each in the caller's transaction with its audit row, whoever
// asks (an end user through service.ts, an operator through admin.ts): the rules that keep an
// organization whole (an owner always, the limits) live here once. The caller has locked the
// organization (store.findOrganization with `lock`) before any change of its members.

/** Who acts: an end user (`userId`) or an operator (`actor`, the management token), and from where. */
export interface Actor extends EventOrigin {
  userId?: string | null;
}

async function record(
  db: Queryable,
  env: Environment,
  type: AuthEventType,
  subject: string | null,
  actor: Actor,
  details: Record<string, unknown>,
  now: Date,
): Promise<void> {
  const by = actor.userId && actor.userId !== subject ? { byUserId: actor.userId } : {};
  await append(
    db,
    env,
    {
      type,
      userId: subject,
      actor: actor.actor ?? null,
      clientAddress: actor.clientAddress ?? null,
      userAgent: actor.userAgent ?? null,
      details: { ...details, ...by },
    },
    now,
  );
}

/** A new organization with `ownerId` as its owner; 409 when the owner already has the most organizations allowed. */
export async function createOrganization(db: Queryable, env: Environment, name: string, ownerId: string, actor: Actor, now: Date) {
  const limit = env.settings.organizations.maxOrganizationsPerUser;
  if ((await store.countUserOrganizationsLocked(db, ownerId)) >= limit)
    throw new AppError('ORGANIZATION_LIMIT_REACHED', `A user may belong to at most ${limit} organizations in this environment.`);
  const organization = await store.insertOrganization(db, env, name, now);
  await store.insertMember(db, organization.id, ownerId, OWNER, now);
  await record(db, env, AUTH_EVENT.organizationCreated, ownerId, actor, { organizationId: organization.id, name }, now);
  await record(db, env, AUTH_EVENT.memberAdded, ownerId, actor, { organizationId: organization.id, role: OWNER }, now);
  return organization;
}

export async function renameOrganization(db: Queryable, env: Environment, org: store.Organization, name: string, actor: Actor, now: Date) {
  const renamed = await store.renameOrganization(db, org.id, name, now);
  await record(
    db,
    env,
    AUTH_EVENT.organizationRenamed,
    actor.userId ?? null,
    actor,
    { organizationId: org.id, from: org.name, to: name },
    now,
  );
  return renamed;
}

/** Soft delete; returns the memberships to revoke once committed (revokeMemberships: their tokens stop at once). */
export async function deleteOrganization(
  db: Queryable,
  env: Environment,
  org: store.Organization,
  actor: Actor,
  now: Date,
  revokeUntil: Date,
) {
  const memberships = await store.membershipsOf(db, org.id);
  await store.markOrganizationDeleted(db, org.id, now);
  await leaveActiveOrganization(
    db,
    org.id,
    memberships.map((m) => m.userId),
  );
  await record(db, env, AUTH_EVENT.organizationDeleted, actor.userId ?? null, actor, { organizationId: org.id, name: org.name }, now);
  await announceRevoked(
    db,
    memberships.map((m) => m.id),
    revokeUntil,
  );
  return memberships.map((m) => m.id);
}

/** Adds a user (of this environment: the caller found them there); both limits apply. */
export async function addMember(
  db: Queryable,
  env: Environment,
  org: store.Organization,
  userId: string,
  role: string,
  actor: Actor,
  now: Date,
  details: Record<string, unknown> = {},
) {
  const limits = env.settings.organizations;
  if (await store.findMember(db, org.id, userId)) throw new AppError('ORGANIZATION_MEMBER_EXISTS');
  if ((await store.countMembers(db, org.id)).members >= limits.maxMembers)
    throw new AppError('ORGANIZATION_LIMIT_REACHED', `An organization may have at most ${limits.maxMembers} members in this environment.`);
  if ((await store.countUserOrganizationsLocked(db, userId)) >= limits.maxOrganizationsPerUser)
    throw new AppError(
      'ORGANIZATION_LIMIT_REACHED',
      `A user may belong to at most ${limits.maxOrganizationsPerUser} organizations in this environment.`,
    );
  await store.insertMember(db, org.id, userId, role, now);
  await record(db, env, AUTH_EVENT.memberAdded, userId, actor, { organizationId: org.id, role, ...details }, now);
}

/** A member's new role; taking the role of the last owner away is 409. Shows in their tokens at the next refresh. */
export async function changeRole(
  db: Queryable,
  env: Environment,
  org: store.Organization,
  member: store.Member,
  role: string,
  actor: Actor,
  now: Date,
) {
  if (member.role === role) return;
  if (member.role === OWNER && (await store.countMembers(db, org.id)).owners <= 1) throw new AppError('ORGANIZATION_LAST_OWNER');
  await store.setMemberRole(db, org.id, member.userId, role, now);
  await record(db, env, AUTH_EVENT.memberRoleChanged, member.userId, actor, { organizationId: org.id, from: member.role, to: role }, now);
}

/** Removes (or lets leave) a member, never the last owner; returns the membership to revoke once committed. */
export async function removeMember(
  db: Queryable,
  env: Environment,
  org: store.Organization,
  member: store.Member,
  actor: Actor,
  now: Date,
  revokeUntil: Date,
) {
  if (member.role === OWNER && (await store.countMembers(db, org.id)).owners <= 1) throw new AppError('ORGANIZATION_LAST_OWNER');
  await store.deleteMember(db, org.id, member.userId);
  await leaveActiveOrganization(db, org.id, [member.userId]);
  const left = actor.userId === member.userId;
  await record(db, env, AUTH_EVENT.memberRemoved, member.userId, actor, { organizationId: org.id, role: member.role, left }, now);
  await announceRevoked(db, [member.id], revokeUntil);
  return member.id;
}

const HOUR_MS = 3_600_000;

/**
 * An invitation and its e-mail, committed together (the courier sends it afterwards): within the
 * organization's hourly allowance, never to a member.
 */
export async function sendInvitation(
  db: Queryable,
  secrets: SecretBox,
  publicUrl: string,
  env: Environment,
  org: store.Organization,
  input: { email: string; role: string },
  actor: Actor,
  now: Date,
): Promise<Invitation> {
  const settings = env.settings.organizations;
  const sent = await countInvitationsSince(db, org.id, new Date(now.getTime() - HOUR_MS));
  // Retry when the oldest invitation of the window leaves it.
  if (sent.count >= settings.invitationsPerHour)
    throw rateLimited(((sent.oldest?.getTime() ?? now.getTime()) + HOUR_MS - now.getTime()) / 1000);
  if (await store.isMemberByEmail(db, org.id, input.email)) throw new AppError('ORGANIZATION_MEMBER_EXISTS');
  const token = randomToken('wgi_');
  const expiresAt = new Date(now.getTime() + settings.invitationTtlSeconds * 1000);
  const invitation = await insertInvitation(
    db,
    {
      organizationId: org.id,
      email: input.email,
      role: input.role,
      tokenHash: hashToken(token),
      invitedBy: actor.userId ?? null,
      expiresAt,
    },
    now,
  );
  const mail = invitationMail({
    to: input.email,
    organization: org.name,
    role: input.role,
    link: invitationLink(settings.invitationUrl ?? `${publicUrl}/`, token),
    token,
    validDays: Math.max(1, Math.round(settings.invitationTtlSeconds / 86_400)),
    projectId: env.projectId,
  });
  await enqueueMail(
    db,
    secrets,
    { projectId: env.projectId, environment: env.name, userId: null, purpose: 'organization-invitation', mail },
    now,
  );
  const details = { organizationId: org.id, invitationId: invitation.id, email: input.email, role: input.role };
  await record(db, env, AUTH_EVENT.invitationSent, actor.userId ?? null, actor, details, now);
  return invitation;
}

export async function recordInvitationRevoked(db: Queryable, env: Environment, invitation: Invitation, actor: Actor, now: Date) {
  const details = { organizationId: invitation.organizationId, invitationId: invitation.id, email: invitation.email };
  await record(db, env, AUTH_EVENT.invitationRevoked, actor.userId ?? null, actor, details, now);
}

export async function recordInvitationAccepted(db: Queryable, env: Environment, invitation: Invitation, actor: Actor, now: Date) {
  const details = { organizationId: invitation.organizationId, invitationId: invitation.id, role: invitation.role };
  await record(db, env, AUTH_EVENT.invitationAccepted, actor.userId ?? null, actor, details, now);
}

/** Until when a revoked membership stays on the revocation list: as long as a token naming it could be accepted (its lifetime plus the clock skew that authentication allows). */
export function revokeUntil(ctx: Context, env: Environment, now: Date): Date {
  return new Date(now.getTime() + (env.accessTokenTtlSeconds + ctx.config.tokenClockSkewSeconds) * 1000);
}

/**
 * Every api process adds the memberships to its own revocation list when the change commits (the
 * NOTIFY of cache-events.ts, sent with the commit): a change made by the CLI, or by an api that
 * stops right after committing, still refuses the tokens.
 */
async function announceRevoked(db: Queryable, membershipIds: string[], until: Date): Promise<void> {
  if (membershipIds.length) await publishCacheEvent(db, { kind: 'sessions', sessionIds: membershipIds, until: until.toISOString() });
}

/** After the commit: this process refuses tokens naming these memberships (`org_mid`) from its next request on. */
export async function revokeMemberships(ctx: Context, env: Environment, membershipIds: readonly string[], now: Date): Promise<void> {
  const until = revokeUntil(ctx, env, now);
  for (const id of membershipIds) await ctx.revocations.revoke(id, until);
}
