import { randomUUID } from 'node:crypto';
import { selectList } from '../../core/db/columns.js';
import type { Queryable } from '../../core/db/pool.js';
import type { Membership, MembershipColumns } from '../active-organization.js';

// Every statement on walgate.organizations and walgate.organization_members. An organization is
// always read within its environment, so an id of another project's organization matches nothing.

export interface Scope {
  projectId: string;
  name: string;
}

export interface Organization {
  id: string;
  name: string;
  createdAt: Date;
  updatedAt: Date;
}

export interface Member {
  /** The membership's id (tokens' `org_mid`). */
  id: string;
  userId: string;
  email: string;
  role: string;
  createdAt: Date;
}

const ORGANIZATION = selectList<Organization>({ id: 'o.id', name: 'o.name', createdAt: 'o.created_at', updatedAt: 'o.updated_at' });
const MEMBER = selectList<Member>({ id: 'm.id', userId: 'm.user_id', email: 'u.email', role: 'm.role', createdAt: 'm.created_at' });

export async function insertOrganization(db: Queryable, scope: Scope, name: string, now: Date): Promise<Organization> {
  const { rows } = await db.query<Organization>(
    `INSERT INTO walgate.organizations AS o (id, project_id, environment, name, created_at, updated_at)
     VALUES ($1, $2, $3, $4, $5, $5) RETURNING ${ORGANIZATION}`,
    [randomUUID(), scope.projectId, scope.name, name, now],
  );
  return rows[0]!;
}

/**
 * A live organization of this environment. `lock`: its row is locked until the transaction ends,
 * which serialises every change of its members — so two owners who remove each other at once
 * cannot both see another owner left, and the member limit holds under concurrent joins.
 */
/**
 * `lock`: true holds the row against every other lock until the transaction ends (a change of the
 * organization or its members); 'share' only against those changes, so that many members can
 * switch to it at once.
 */
export async function findOrganization(
  db: Queryable,
  scope: Scope,
  id: string,
  lock: boolean | 'share' = false,
): Promise<Organization | undefined> {
  const rowLock = lock === 'share' ? ' FOR SHARE' : lock ? ' FOR UPDATE' : '';
  const { rows } = await db.query<Organization>(
    `SELECT ${ORGANIZATION} FROM walgate.organizations o
      WHERE o.id = $1 AND o.project_id = $2 AND o.environment = $3 AND o.deleted_at IS NULL${rowLock}`,
    [id, scope.projectId, scope.name],
  );
  return rows[0];
}

export async function renameOrganization(db: Queryable, id: string, name: string, now: Date): Promise<Organization> {
  const { rows } = await db.query<Organization>(
    `UPDATE walgate.organizations o SET name = $2, updated_at = $3 WHERE o.id = $1 RETURNING ${ORGANIZATION}`,
    [id, name, now],
  );
  return rows[0]!;
}

/** Soft: the row stays (the audit trail names it); its members and invitations stop counting. */
export async function markOrganizationDeleted(db: Queryable, id: string, now: Date): Promise<void> {
  await db.query('UPDATE walgate.organizations SET deleted_at = $2, updated_at = $2 WHERE id = $1', [id, now]);
}

export interface UserOrganization extends Organization {
  role: string;
}

/** The user's live organizations with their role, oldest membership first (bounded by the per-user limit). */
export async function listUserOrganizations(db: Queryable, scope: Scope, userId: string, limit: number): Promise<UserOrganization[]> {
  const { rows } = await db.query<UserOrganization>(
    `SELECT ${ORGANIZATION}, m.role FROM walgate.organization_members m JOIN walgate.organizations o ON o.id = m.organization_id
      WHERE m.user_id = $1 AND o.project_id = $2 AND o.environment = $3 AND o.deleted_at IS NULL
      ORDER BY m.created_at, o.id LIMIT $4`,
    [userId, scope.projectId, scope.name, limit],
  );
  return rows;
}

/** An environment's live organizations, newest first, after the cursor (created_at, id). */
export async function listOrganizations(
  db: Queryable,
  scope: Scope,
  q: { cursor?: { createdAt: Date; id: string }; limit: number },
): Promise<Array<Organization & { members: number }>> {
  const { rows } = await db.query<Organization & { members: number }>(
    `SELECT ${ORGANIZATION}, (SELECT count(*)::int FROM walgate.organization_members m WHERE m.organization_id = o.id) AS members
       FROM walgate.organizations o
      WHERE o.project_id = $1 AND o.environment = $2 AND o.deleted_at IS NULL
        AND ($3::timestamptz IS NULL OR (o.created_at, o.id) < ($3, $4::uuid))
      ORDER BY o.created_at DESC, o.id DESC LIMIT $5`,
    [scope.projectId, scope.name, q.cursor?.createdAt ?? null, q.cursor?.id ?? null, q.limit],
  );
  return rows;
}

/**
 * Organizations the user belongs to, counted under a lock of the user's own (an advisory lock for
 * the transaction): two concurrent creations or joins of one user cannot both pass the limit.
 */
export async function countUserOrganizationsLocked(db: Queryable, userId: string): Promise<number> {
  await db.query(`SELECT pg_advisory_xact_lock(hashtextextended('walgate.organizations-of:' || $1, 0))`, [userId]);
  const { rows } = await db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM walgate.organization_members m JOIN walgate.organizations o ON o.id = m.organization_id
      WHERE m.user_id = $1 AND o.deleted_at IS NULL`,
    [userId],
  );
  return rows[0]!.n;
}

/** Inserts the membership; a unique violation (23505) means the user is a member already. */
export async function insertMember(db: Queryable, organizationId: string, userId: string, role: string, now: Date): Promise<string> {
  const id = randomUUID();
  await db.query(
    `INSERT INTO walgate.organization_members (id, organization_id, user_id, role, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $5)`,
    [id, organizationId, userId, role, now],
  );
  return id;
}

export async function findMember(db: Queryable, organizationId: string, userId: string): Promise<Member | undefined> {
  const { rows } = await db.query<Member>(
    `SELECT ${MEMBER} FROM walgate.organization_members m JOIN walgate.users u ON u.id = m.user_id
      WHERE m.organization_id = $1 AND m.user_id = $2`,
    [organizationId, userId],
  );
  return rows[0];
}

/** Whether a user of this address is a member (an invitation to a member is pointless). */
export async function isMemberByEmail(db: Queryable, organizationId: string, email: string): Promise<boolean> {
  const { rowCount } = await db.query(
    `SELECT 1 FROM walgate.organization_members m JOIN walgate.users u ON u.id = m.user_id WHERE m.organization_id = $1 AND u.email = $2`,
    [organizationId, email],
  );
  return (rowCount ?? 0) > 0;
}

/** Members, owners first, then by joining; bounded by the member limit. */
export async function listMembers(db: Queryable, organizationId: string, limit: number): Promise<Member[]> {
  const { rows } = await db.query<Member>(
    `SELECT ${MEMBER} FROM walgate.organization_members m JOIN walgate.users u ON u.id = m.user_id
      WHERE m.organization_id = $1 ORDER BY (m.role = 'owner') DESC, m.created_at, m.id LIMIT $2`,
    [organizationId, limit],
  );
  return rows;
}

export async function countMembers(db: Queryable, organizationId: string): Promise<{ members: number; owners: number }> {
  const { rows } = await db.query<{ members: number; owners: number }>(
    `SELECT count(*)::int AS members, (count(*) FILTER (WHERE role = 'owner'))::int AS owners
       FROM walgate.organization_members WHERE organization_id = $1`,
    [organizationId],
  );
  return rows[0]!;
}

export async function setMemberRole(db: Queryable, organizationId: string, userId: string, role: string, now: Date): Promise<void> {
  await db.query('UPDATE walgate.organization_members SET role = $3, updated_at = $4 WHERE organization_id = $1 AND user_id = $2', [
    organizationId,
    userId,
    role,
    now,
  ]);
}

export async function deleteMember(db: Queryable, organizationId: string, userId: string): Promise<void> {
  await db.query('DELETE FROM walgate.organization_members WHERE organization_id = $1 AND user_id = $2', [organizationId, userId]);
}

/** Every membership of the organization (its deletion revokes them all); bounded by the member limit. */
export async function membershipsOf(db: Queryable, organizationId: string): Promise<Array<{ id: string; userId: string }>> {
  const { rows } = await db.query<{ id: string; userId: string }>(
    'SELECT id, user_id AS "userId" FROM walgate.organization_members WHERE organization_id = $1',
    [organizationId],
  );
  return rows;
}

/** The membership behind a session's active organization: live organization, member still. */
/** The live membership of a user in an organization of the environment, as SQL over the caller's expressions (active-organization.ts). */
export function activeMembershipSql(c: MembershipColumns): string {
  return `SELECT m.id AS membership_id, m.role FROM walgate.organization_members m JOIN walgate.organizations o ON o.id = m.organization_id
           WHERE m.organization_id = ${c.organization} AND m.user_id = ${c.user} AND o.project_id = ${c.project}
             AND o.environment = ${c.environment} AND o.deleted_at IS NULL`;
}

export async function activeMembership(
  db: Queryable,
  scope: Scope,
  organizationId: string,
  userId: string,
): Promise<Membership | undefined> {
  const { rows } = await db.query<{ membership_id: string; role: string }>({
    name: 'walgate_active_membership',
    text: activeMembershipSql({ organization: '$1', user: '$2', project: '$3', environment: '$4' }),
    values: [organizationId, userId, scope.projectId, scope.name],
  });
  const r = rows[0];
  return r && { membershipId: r.membership_id, role: r.role };
}
