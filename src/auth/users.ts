import { selectList } from '../core/db/columns.js';
import type { Queryable } from '../core/db/pool.js';

// Every statement on walgate.users.

export interface User {
  id: string;
  projectId: string;
  environment: string;
  email: string;
  name: string | null;
  passwordHash: string;
  emailVerifiedAt: Date | null;
  failedLogins: number;
  lockedUntil: Date | null;
  createdAt: Date;
}

/** The user as the API shows it. */
export interface UserView {
  id: string;
  email: string;
  name: string | null;
  emailVerified: boolean;
  createdAt: string;
}

export function userView(u: User): UserView {
  return { id: u.id, email: u.email, name: u.name, emailVerified: u.emailVerifiedAt !== null, createdAt: u.createdAt.toISOString() };
}

const COLUMNS = selectList<User>({
  id: 'id',
  projectId: 'project_id',
  environment: 'environment',
  email: 'email',
  name: 'name',
  passwordHash: 'password_hash',
  emailVerifiedAt: 'email_verified_at',
  failedLogins: 'failed_logins',
  lockedUntil: 'locked_until',
  createdAt: 'created_at',
});

/** The environment a user belongs to (an `Environment` will do). */
export interface Scope {
  projectId: string;
  name: string;
}

export async function insertUser(
  db: Queryable,
  scope: Scope,
  input: { email: string; name: string | null; passwordHash: string },
  now: Date,
): Promise<User> {
  const { rows } = await db.query<User>(
    `INSERT INTO walgate.users (project_id, environment, email, name, password_hash, created_at, updated_at)
     VALUES ($1, $2, $3, $4, $5, $6, $6) RETURNING ${COLUMNS}`,
    [scope.projectId, scope.name, input.email, input.name, input.passwordHash, now],
  );
  return rows[0]!;
}

/**
 * The user of a live session, with the session's expiry: what `/auth/me` shows, in one round trip.
 * A revoked session has none — so /auth/me refuses it even when the revocation list has lost it
 * (a Redis restarted without persistence).
 */
export async function findSessionUser(db: Queryable, sessionId: string): Promise<{ user: User; sessionExpiresAt: Date } | undefined> {
  const { rows } = await db.query<User & { sessionExpiresAt: Date }>(
    `SELECT u.*, s.expires_at AS "sessionExpiresAt"
       FROM walgate.sessions s CROSS JOIN LATERAL (SELECT ${COLUMNS} FROM walgate.users WHERE id = s.user_id) u
      WHERE s.id = $1 AND s.revoked_at IS NULL`,
    [sessionId],
  );
  if (!rows[0]) return undefined;
  const { sessionExpiresAt, ...user } = rows[0];
  return { user, sessionExpiresAt };
}

export async function findUserByEmail(db: Queryable, scope: Scope, email: string): Promise<User | undefined> {
  const { rows } = await db.query<User>(`SELECT ${COLUMNS} FROM walgate.users WHERE project_id = $1 AND environment = $2 AND email = $3`, [
    scope.projectId,
    scope.name,
    email,
  ]);
  return rows[0];
}

export async function markVerified(db: Queryable, userId: string, now: Date): Promise<User> {
  const { rows } = await db.query<User>(
    `UPDATE walgate.users SET email_verified_at = coalesce(email_verified_at, $2), updated_at = $2 WHERE id = $1 RETURNING ${COLUMNS}`,
    [userId, now],
  );
  return rows[0]!;
}

/**
 * Counts a failed login. One statement under the row lock, so concurrent failures count exactly
 * and only one of them locks; the failure that reaches the threshold locks the account and starts
 * the count again. Returns the end of the lock when the account is locked now (by this failure or
 * by a concurrent one that got there first), else null.
 */
export async function recordFailedLogin(
  db: Queryable,
  userId: string,
  threshold: number,
  lockUntil: Date,
  now: Date,
): Promise<Date | null> {
  const { rows } = await db.query<{ locked_until: Date | null }>(
    `UPDATE walgate.users SET
       failed_logins = CASE WHEN locked_until > $4 THEN failed_logins
                            WHEN failed_logins + 1 >= $2 THEN 0 ELSE failed_logins + 1 END,
       locked_until = CASE WHEN locked_until > $4 THEN locked_until
                           WHEN failed_logins + 1 >= $2 THEN $3::timestamptz ELSE locked_until END,
       updated_at = $4
     WHERE id = $1
     RETURNING CASE WHEN locked_until > $4 THEN locked_until END AS locked_until`,
    [userId, threshold, lockUntil, now],
  );
  return rows[0]?.locked_until ?? null;
}

export async function recordSuccessfulLogin(db: Queryable, userId: string, newHash: string | null, now: Date): Promise<void> {
  await db.query(
    `UPDATE walgate.users SET failed_logins = 0, locked_until = NULL, password_hash = coalesce($2, password_hash), updated_at = $3
     WHERE id = $1`,
    [userId, newHash, now],
  );
}

/** A new password ends any lockout; the code that allowed it proved the address, too. */
export async function resetPassword(db: Queryable, userId: string, passwordHash: string, now: Date): Promise<void> {
  await db.query(
    `UPDATE walgate.users SET password_hash = $2, failed_logins = 0, locked_until = NULL,
       email_verified_at = coalesce(email_verified_at, $3), updated_at = $3 WHERE id = $1`,
    [userId, passwordHash, now],
  );
}
