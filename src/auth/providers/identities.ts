import { randomBytes } from 'node:crypto';
import type { Queryable } from '../../core/db/pool.js';
import { hashPassword } from '../passwords.js';
import { USER_COLUMNS, type Scope, type User } from '../users.js';

// Every statement on walgate.identities, and the user a provider sign-in creates.

export interface Identity {
  id: string;
  userId: string;
  provider: string;
  subject: string;
  email: string | null;
  createdAt: Date;
  lastSignInAt: Date;
}

const COLUMNS = `id, user_id AS "userId", provider, subject, email, created_at AS "createdAt", last_sign_in_at AS "lastSignInAt"`;

/** The identity of this provider's subject, its last use recorded. */
export async function touchIdentity(
  db: Queryable,
  scope: Scope,
  provider: string,
  subject: string,
  email: string | undefined,
  now: Date,
): Promise<Identity | undefined> {
  const { rows } = await db.query<Identity>(
    `UPDATE walgate.identities SET last_sign_in_at = $5, email = coalesce($6, email)
      WHERE project_id = $1 AND environment = $2 AND provider = $3 AND subject = $4 RETURNING ${COLUMNS}`,
    [scope.projectId, scope.name, provider, subject, now, email ?? null],
  );
  return rows[0];
}

export async function insertIdentity(
  db: Queryable,
  scope: Scope,
  input: { userId: string; provider: string; subject: string; email: string | undefined },
  now: Date,
): Promise<Identity> {
  const { rows } = await db.query<Identity>(
    `INSERT INTO walgate.identities (user_id, project_id, environment, provider, subject, email, created_at, last_sign_in_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $7) RETURNING ${COLUMNS}`,
    [input.userId, scope.projectId, scope.name, input.provider, input.subject, input.email ?? null, now],
  );
  return rows[0]!;
}

export async function listIdentities(db: Queryable, userId: string): Promise<Identity[]> {
  const { rows } = await db.query<Identity>(`SELECT ${COLUMNS} FROM walgate.identities WHERE user_id = $1 ORDER BY created_at, id`, [
    userId,
  ]);
  return rows;
}

/**
 * Removes one of the user's identities unless it is their last way to sign in (no password and
 * no other identity). The user's row is locked first, so two removals racing for the last two
 * identities cannot both succeed.
 */
export async function removeIdentity(
  db: Queryable,
  userId: string,
  identityId: string,
): Promise<{ outcome: 'removed'; identity: Identity } | { outcome: 'not_found' } | { outcome: 'last' }> {
  const { rows: user } = await db.query<{ hasPassword: boolean }>(
    'SELECT has_password AS "hasPassword" FROM walgate.users WHERE id = $1 FOR UPDATE',
    [userId],
  );
  const identities = await listIdentities(db, userId);
  const identity = identities.find((i) => i.id === identityId);
  if (!user[0] || !identity) return { outcome: 'not_found' };
  if (!user[0].hasPassword && identities.length === 1) return { outcome: 'last' };
  await db.query('DELETE FROM walgate.identities WHERE id = $1 AND user_id = $2', [identityId, userId]);
  return { outcome: 'removed', identity };
}

/**
 * A user created by a provider sign-in: no password of their own (the hash is of a random secret
 * nobody learns; `has_password` false until a password reset gives them one).
 */
export async function insertProviderUser(
  db: Queryable,
  scope: Scope,
  input: { email: string; name: string | null; emailVerified: boolean },
  now: Date,
): Promise<User> {
  const passwordHash = await hashPassword(randomBytes(32).toString('base64url'));
  const { rows } = await db.query<User>(
    `INSERT INTO walgate.users (project_id, environment, email, name, password_hash, has_password, created_at, updated_at, email_verified_at)
     VALUES ($1, $2, $3, $4, $5, false, $6, $6, $7) RETURNING ${USER_COLUMNS}`,
    [scope.projectId, scope.name, input.email, input.name, passwordHash, now, input.emailVerified ? now : null],
  );
  return rows[0]!;
}
