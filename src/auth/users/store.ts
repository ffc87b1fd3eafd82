import type { Queryable } from '../../core/db/pool.js';
import { USER_COLUMNS, type User } from '../users.js';

// What the admin API reads and writes of walgate.users beyond the auth flows: search, state,
// sessions, recent mail.

export type UserStatus = 'unverified' | 'active' | 'locked' | 'disabled';

export interface ListedUser extends User {
  lockedUntil: Date | null;
}

export interface UserPage {
  query?: string;
  status?: UserStatus;
  cursor?: { createdAt: Date; id: string };
  limit: number;
}

const LISTED = `${USER_COLUMNS}, locked_until AS "lockedUntil"`;

/** One condition per status: disabled wins, then unverified, then locked; the rest are active. */
const STATUS_SQL: Record<UserStatus, string> = {
  disabled: 'disabled_at IS NOT NULL',
  unverified: 'disabled_at IS NULL AND email_verified_at IS NULL',
  locked: 'disabled_at IS NULL AND email_verified_at IS NOT NULL AND locked_until > $4',
  active: 'disabled_at IS NULL AND email_verified_at IS NOT NULL AND (locked_until IS NULL OR locked_until <= $4)',
};

export function statusOf(u: ListedUser, now: Date): UserStatus {
  if (u.disabledAt) return 'disabled';
  if (!u.emailVerifiedAt) return 'unverified';
  if (u.lockedUntil && u.lockedUntil > now) return 'locked';
  return 'active';
}

/** Newest first; `query` is an e-mail prefix (LIKE's wildcards in it are taken literally). */
export async function listUsers(db: Queryable, env: { projectId: string; name: string }, page: UserPage, now: Date): Promise<ListedUser[]> {
  const prefix = page.query ? `${page.query.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`)}%` : null;
  const { rows } = await db.query<ListedUser>(
    `SELECT ${LISTED} FROM walgate.users
      WHERE project_id = $1 AND environment = $2 AND ($3::text IS NULL OR email LIKE $3)
        AND $4::timestamptz IS NOT NULL AND ${page.status ? STATUS_SQL[page.status] : 'true'}
        AND ($5::timestamptz IS NULL OR (created_at, id) < ($5, $6::uuid))
      ORDER BY created_at DESC, id DESC LIMIT $7`,
    [env.projectId, env.name, prefix, now, page.cursor?.createdAt ?? null, page.cursor?.id ?? null, page.limit],
  );
  return rows;
}

/** The user; `lock`: locked for the rest of the caller's transaction (a change decided from what was read). */
export async function findUser(
  db: Queryable,
  env: { projectId: string; name: string },
  id: string,
  lock = false,
): Promise<ListedUser | undefined> {
  const { rows } = await db.query<ListedUser>(
    `SELECT ${LISTED} FROM walgate.users WHERE project_id = $1 AND environment = $2 AND id = $3${lock ? ' FOR UPDATE' : ''}`,
    [env.projectId, env.name, id],
  );
  return rows[0];
}

export interface SessionView {
  id: string;
  createdAt: Date;
  expiresAt: Date;
  revokedAt: Date | null;
  revokedReason: string | null;
}

export async function userSessions(db: Queryable, userId: string, limit = 50): Promise<SessionView[]> {
  const { rows } = await db.query<SessionView>(
    `SELECT id, created_at AS "createdAt", expires_at AS "expiresAt", revoked_at AS "revokedAt", revoked_reason AS "revokedReason"
       FROM walgate.sessions WHERE user_id = $1 ORDER BY created_at DESC LIMIT $2`,
    [userId, limit],
  );
  return rows;
}

export interface MailView {
  id: string;
  purpose: string;
  state: string;
  attempts: number;
  lastError: string | null;
  createdAt: Date;
  sentAt: Date | null;
}

/** The user's recent e-mails and their state: never their message (it carries a code). */
export async function userMails(db: Queryable, userId: string, limit = 20): Promise<MailView[]> {
  const { rows } = await db.query<MailView>(
    `SELECT id, purpose, state, attempts, last_error AS "lastError", created_at AS "createdAt", sent_at AS "sentAt"
       FROM walgate.mail_outbox WHERE user_id = $1 ORDER BY created_at DESC LIMIT $2`,
    [userId, limit],
  );
  return rows;
}

/** Applies the admin's changes; returns the user as it now is. */
export async function updateUser(
  db: Queryable,
  userId: string,
  change: { disabled?: boolean; emailVerified?: boolean; appMetadata?: Record<string, unknown>; userMetadata?: Record<string, unknown> },
  now: Date,
): Promise<ListedUser> {
  const { rows } = await db.query<ListedUser>(
    `UPDATE walgate.users SET
       disabled_at = CASE WHEN $2::boolean IS NULL THEN disabled_at WHEN $2 THEN coalesce(disabled_at, $6) ELSE NULL END,
       email_verified_at = CASE WHEN $3::boolean IS NULL THEN email_verified_at WHEN $3 THEN coalesce(email_verified_at, $6) ELSE NULL END,
       app_metadata = coalesce($4::jsonb, app_metadata),
       user_metadata = coalesce($5::jsonb, user_metadata),
       updated_at = $6
     WHERE id = $1 RETURNING ${LISTED}`,
    [
      userId,
      change.disabled ?? null,
      change.emailVerified ?? null,
      change.appMetadata ? JSON.stringify(change.appMetadata) : null,
      change.userMetadata ? JSON.stringify(change.userMetadata) : null,
      now,
    ],
  );
  return rows[0]!;
}

/** The user and everything of theirs (sessions, refresh tokens, codes, mail: by cascade). */
export async function deleteUser(db: Queryable, userId: string): Promise<void> {
  await db.query('DELETE FROM walgate.users WHERE id = $1', [userId]);
}
