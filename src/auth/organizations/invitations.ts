import { randomUUID } from 'node:crypto';
import { selectList } from '../../core/db/columns.js';
import type { Queryable } from '../../core/db/pool.js';
import type { Scope } from './store.js';

// Every statement on walgate.organization_invitations. The token itself is never stored: its
// SHA-256 is (256 random bits, like a refresh token), looked up within the environment.

export interface Invitation {
  id: string;
  organizationId: string;
  email: string;
  role: string;
  invitedBy: string | null;
  createdAt: Date;
  expiresAt: Date;
  acceptedAt: Date | null;
  revokedAt: Date | null;
}

const COLUMNS = selectList<Invitation>({
  id: 'i.id',
  organizationId: 'i.organization_id',
  email: 'i.email',
  role: 'i.role',
  invitedBy: 'i.invited_by',
  createdAt: 'i.created_at',
  expiresAt: 'i.expires_at',
  acceptedAt: 'i.accepted_at',
  revokedAt: 'i.revoked_at',
});

export interface NewInvitation {
  organizationId: string;
  email: string;
  role: string;
  tokenHash: Buffer;
  invitedBy: string | null;
  expiresAt: Date;
}

export async function insertInvitation(db: Queryable, input: NewInvitation, now: Date): Promise<Invitation> {
  const { rows } = await db.query<Invitation>(
    `INSERT INTO walgate.organization_invitations AS i (id, organization_id, email, role, token_hash, invited_by, created_at, expires_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING ${COLUMNS}`,
    [randomUUID(), input.organizationId, input.email, input.role, input.tokenHash, input.invitedBy, now, input.expiresAt],
  );
  return rows[0]!;
}

/** Invitations the organization sent since `since`, and the oldest of them (the per-hour limit; the caller holds the organization's lock). */
export async function countInvitationsSince(
  db: Queryable,
  organizationId: string,
  since: Date,
): Promise<{ count: number; oldest: Date | null }> {
  const { rows } = await db.query<{ count: number; oldest: Date | null }>(
    'SELECT count(*)::int AS count, min(created_at) AS oldest FROM walgate.organization_invitations WHERE organization_id = $1 AND created_at > $2',
    [organizationId, since],
  );
  return rows[0]!;
}

/**
 * The invitation of this token in this environment, whatever its state, locked until the
 * transaction ends (two accepts of one token: the second sees it accepted). Only a live
 * organization's invitations are found.
 */
export async function findInvitationByToken(db: Queryable, scope: Scope, tokenHash: Buffer): Promise<Invitation | undefined> {
  const { rows } = await db.query<Invitation>(
    `SELECT ${COLUMNS} FROM walgate.organization_invitations i JOIN walgate.organizations o ON o.id = i.organization_id
      WHERE i.token_hash = $1 AND o.project_id = $2 AND o.environment = $3 AND o.deleted_at IS NULL
      FOR UPDATE OF i`,
    [tokenHash, scope.projectId, scope.name],
  );
  return rows[0];
}

export async function markAccepted(db: Queryable, id: string, userId: string, now: Date): Promise<void> {
  await db.query('UPDATE walgate.organization_invitations SET accepted_at = $2, accepted_by = $3 WHERE id = $1', [id, now, userId]);
}

/** The organization's invitations still open (neither accepted nor revoked; expired ones too, marked by their time), newest first. */
export async function listOpenInvitations(db: Queryable, organizationId: string, limit: number): Promise<Invitation[]> {
  const { rows } = await db.query<Invitation>(
    `SELECT ${COLUMNS} FROM walgate.organization_invitations i
      WHERE i.organization_id = $1 AND i.accepted_at IS NULL AND i.revoked_at IS NULL
      ORDER BY i.created_at DESC, i.id LIMIT $2`,
    [organizationId, limit],
  );
  return rows;
}

/** Revokes an open invitation of this organization; undefined when there is none with this id. */
export async function revokeInvitation(db: Queryable, organizationId: string, id: string, now: Date): Promise<Invitation | undefined> {
  const { rows } = await db.query<Invitation>(
    `UPDATE walgate.organization_invitations i SET revoked_at = $3
      WHERE i.id = $2 AND i.organization_id = $1 AND i.accepted_at IS NULL AND i.revoked_at IS NULL RETURNING ${COLUMNS}`,
    [organizationId, id, now],
  );
  return rows[0];
}
