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
  createdAt: Date;
  disabledAt: Date | null;
  userMetadata: Record<string, unknown>;
  appMetadata: Record<string, unknown>;
  /** The last password reset: device tokens issued until then are worth nothing (sessions/devices.ts). */
  passwordResetAt: Date | null;
  /** Read with the user for a password login (findUserByEmail): whether an active second factor exists. */
  hasSecondFactor?: boolean;
}

/** The user as the API shows it. */
export interface UserView {
  id: string;
  email: string;
  name: string | null;
  emailVerified: boolean;
  createdAt: string;
  userMetadata: Record<string, unknown>;
  appMetadata: Record<string, unknown>;
}

export function userView(u: User): UserView {
  return {
    id: u.id,
    email: u.email,
    name: u.name,
    emailVerified: u.emailVerifiedAt !== null,
    createdAt: u.createdAt.toISOString(),
    userMetadata: u.userMetadata,
    appMetadata: u.appMetadata,
  };
}

const COLUMNS = selectList<Omit<User, 'hasSecondFactor'>>({
  id: 'id',
  projectId: 'project_id',
  environment: 'environment',
  email: 'email',
  name: 'name',
  passwordHash: 'password_hash',
  emailVerifiedAt: 'email_verified_at',
  createdAt: 'created_at',
  disabledAt: 'disabled_at',
  userMetadata: 'user_metadata',
  appMetadata: 'app_metadata',
  passwordResetAt: 'password_reset_at',
});

export const USER_COLUMNS = COLUMNS;

/** The environment a user belongs to (an `Environment` will do). */
export interface Scope {
  projectId: string;
  name: string;
}

export async function insertUser(
  db: Queryable,
  scope: Scope,
  input: { email: string; name: string | null; passwordHash: string; emailVerified?: boolean; appMetadata?: Record<string, unknown> },
  now: Date,
): Promise<User> {
  const { rows } = await db.query<User>(
    `INSERT INTO walgate.users (project_id, environment, email, name, password_hash, created_at, updated_at, email_verified_at, app_metadata)
     VALUES ($1, $2, $3, $4, $5, $6, $6, $7, $8) RETURNING ${COLUMNS}`,
    [
      scope.projectId,
      scope.name,
      input.email,
      input.name,
      input.passwordHash,
      now,
      input.emailVerified ? now : null,
      JSON.stringify(input.appMetadata ?? {}),
    ],
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
  const { rows } = await db.query<User>({
    name: 'walgate_user_by_email', // prepared once per connection: every login looks up its user
    // Whether the login ends with the MFA step is read here too: a login of a user without a
    // factor (most of them) needs no round trip of its own to find that out (mfa/service.ts).
    text: `SELECT ${COLUMNS}, EXISTS (SELECT 1 FROM walgate.mfa_factors f WHERE f.user_id = u.id AND f.status = 'active') AS "hasSecondFactor"
             FROM walgate.users u WHERE project_id = $1 AND environment = $2 AND email = $3`,
    values: [scope.projectId, scope.name, email],
  });
  return rows[0];
}

/** A user of this environment by id (a passkey's user handle, an mfaToken's user). */
export async function findUserById(db: Queryable, scope: Scope, id: string): Promise<User | undefined> {
  const { rows } = await db.query<User>(`SELECT ${COLUMNS} FROM walgate.users WHERE project_id = $1 AND environment = $2 AND id = $3`, [
    scope.projectId,
    scope.name,
    id,
  ]);
  return rows[0];
}

/**
 * Verifies an unverified address: the user, or undefined when the address was verified already
 * (by an operator, or a concurrent confirmation) — a code proves nothing new then.
 */
export async function markVerified(db: Queryable, userId: string, now: Date): Promise<User | undefined> {
  const { rows } = await db.query<User>(
    `UPDATE walgate.users SET email_verified_at = $2, updated_at = $2 WHERE id = $1 AND email_verified_at IS NULL RETURNING ${COLUMNS}`,
    [userId, now],
  );
  return rows[0];
}

/** A stronger hash of the same password (an imported bcrypt hash, or older argon2 parameters). */
export async function replacePasswordHash(db: Queryable, userId: string, newHash: string, now: Date): Promise<void> {
  await db.query('UPDATE walgate.users SET password_hash = $2, updated_at = $3 WHERE id = $1', [userId, newHash, now]);
}

/** A new password; the code that allowed it proved the address, too. (The lockout is lockout.ts's.) */
export async function resetPassword(db: Queryable, userId: string, passwordHash: string, now: Date): Promise<void> {
  await db.query(
    `UPDATE walgate.users SET password_hash = $2, locked_until = NULL, has_password = true, password_reset_at = $3,
       email_verified_at = coalesce(email_verified_at, $3), updated_at = $3 WHERE id = $1`,
    [userId, passwordHash, now],
  );
}

/** Remembers when the user's lockout ends (what operators filter on; login decides from lockout.ts). */
export async function markLocked(db: Queryable, userId: string, until: Date): Promise<void> {
  await db.query('UPDATE walgate.users SET locked_until = $2 WHERE id = $1', [userId, until]);
}
