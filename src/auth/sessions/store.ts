import { randomUUID } from 'node:crypto';
import { hashToken, randomToken } from '../../core/crypto/tokens.js';
import type { Queryable } from '../../core/db/pool.js';
import { INSERT as AUDIT_INSERT, parameters as eventParameters, type NewAuthEvent } from '../events/append.js';

// Sessions and their refresh tokens. A session is one login on one device; its id is the access
// tokens' `sid`. Refresh tokens are opaque 256-bit values, stored hashed; each exchange marks the
// token used and issues the next one of the session (exchange.ts; decision.ts says when an
// exchange is allowed).

/** The environment a session belongs to (an `Environment` will do). */
export interface SessionScope {
  projectId: string;
  name: string;
}

/** Where a session is used from, as the user sees it in their list of devices. */
export interface SessionClient {
  ip: string;
  userAgent?: string | null;
}

export interface Lifetimes {
  /** Idle: the session ends when not refreshed for this long. */
  idleSeconds: number;
  /** Absolute: the session ends this long after login. */
  absoluteSeconds: number;
}

export interface NewSession {
  sessionId: string;
  refreshToken: string;
  expiresAt: Date;
  /** Operators' data on the user as it stands at the session's start (for the access token). */
  appMetadata: Record<string, unknown>;
  /** How the user proved who they are (assurance.ts). */
  amr: string[];
}

export const later = (now: Date, seconds: number) => new Date(now.getTime() + seconds * 1000);

export async function createSession(
  db: Queryable,
  userId: string,
  scope: SessionScope,
  client: SessionClient,
  lifetimes: Lifetimes,
  now: Date,
  amr: readonly string[],
  /** The audit row of the session's start, written by the same statement (its session id filled in). */
  audit?: NewAuthEvent,
): Promise<NewSession | undefined> {
  const sessionId = randomUUID();
  const absolute = later(now, lifetimes.absoluteSeconds);
  const expiresAt = new Date(Math.min(later(now, lifetimes.idleSeconds).getTime(), absolute.getTime()));
  const refreshToken = randomToken();
  // One statement: the session, its first token and its audit row commit together, in one round
  // trip (no BEGIN and COMMIT of their own: a statement is atomic). The user row is share-locked
  // and must not be disabled: an operator's disable that commits meanwhile either waits for this
  // session and then ends it, or is seen here and no session starts (and no audit row is written).
  const event = audit ? eventParameters(scope, { ...audit, userId, sessionId }, now) : [];
  const { rows } = await db.query<{ app_metadata: Record<string, unknown> }>({
    // Named (two texts, two names): prepared once per connection, no parsing and planning per login.
    name: audit ? 'walgate_session_start_audited' : 'walgate_session_start',
    text: `WITH u AS (
       SELECT id, app_metadata FROM walgate.users WHERE id = $2 AND disabled_at IS NULL FOR SHARE
     ), s AS (
       INSERT INTO walgate.sessions (id, user_id, project_id, environment, created_at, last_used_at, expires_at, absolute_expires_at, ip, user_agent, amr)
       SELECT $1, u.id, $3, $4, $5, $5, $6, $7, $8, $9, $11 FROM u RETURNING id
     ), t AS (
       INSERT INTO walgate.refresh_tokens (token_hash, session_id, issued_at, expires_at) SELECT $10, id, $5, $6 FROM s
     )${
       audit
         ? `, a AS (${AUDIT_INSERT} SELECT $12, $13, $14, $15::uuid, $16::uuid, $17, $18, $19, $20::jsonb, $21::timestamptz FROM s)`
         : ''
     }
     SELECT u.app_metadata FROM u JOIN s ON true`,
    values: [
      sessionId,
      userId,
      scope.projectId,
      scope.name,
      now,
      expiresAt,
      absolute,
      client.ip,
      client.userAgent ?? null,
      hashToken(refreshToken),
      amr,
      ...event,
    ],
  });
  return rows[0] && { sessionId, refreshToken, expiresAt, appMetadata: rows[0].app_metadata, amr: [...amr] };
}

/**
 * These users' sessions that had switched to this organization switch back to none (a member
 * removed, or the organization deleted): their next refresh carries no organization, even if the
 * user joins it again later. By user, so that the statement walks the live sessions' index.
 */
export async function leaveActiveOrganization(db: Queryable, organizationId: string, userIds: readonly string[]): Promise<void> {
  await db.query(
    `UPDATE walgate.sessions SET active_organization_id = NULL
      WHERE user_id = ANY ($2::uuid[]) AND revoked_at IS NULL AND active_organization_id = $1`,
    [organizationId, userIds],
  );
}

export async function revokeSessionRow(db: Queryable, sessionId: string, reason: string, now: Date): Promise<void> {
  await db.query(
    `WITH s AS (
       UPDATE walgate.sessions SET revoked_at = coalesce(revoked_at, $2), revoked_reason = coalesce(revoked_reason, $3) WHERE id = $1
     )
     UPDATE walgate.refresh_tokens SET used_at = coalesce(used_at, $2) WHERE session_id = $1`,
    [sessionId, now, reason],
  );
}

/** Revokes the user's live sessions, all of them or all but one; returns their ids (for the revocation list). */
export async function revokeUserSessions(db: Queryable, userId: string, reason: string, now: Date, except?: string): Promise<string[]> {
  const { rows } = await db.query<{ id: string }>(
    `WITH s AS (
       UPDATE walgate.sessions SET revoked_at = $2, revoked_reason = $3
        WHERE user_id = $1 AND revoked_at IS NULL AND id IS DISTINCT FROM $4::uuid RETURNING id
     ), t AS (
       UPDATE walgate.refresh_tokens SET used_at = $2 WHERE used_at IS NULL AND session_id IN (SELECT id FROM s)
     )
     SELECT id FROM s`,
    [userId, now, reason, except ?? null],
  );
  return rows.map((r) => r.id);
}

/** Revokes one live session of this user (never another user's); false when there is none. */
export async function revokeOwnSession(db: Queryable, userId: string, sessionId: string, reason: string, now: Date): Promise<boolean> {
  const { rowCount } = await db.query(
    `WITH s AS (
         UPDATE walgate.sessions SET revoked_at = $3, revoked_reason = $4 WHERE id = $2 AND user_id = $1 AND revoked_at IS NULL RETURNING id
       ), t AS (
         UPDATE walgate.refresh_tokens SET used_at = $3 WHERE used_at IS NULL AND session_id IN (SELECT id FROM s)
       )
       SELECT id FROM s`,
    [userId, sessionId, now, reason],
  );
  return (rowCount ?? 0) === 1;
}

export interface SessionRow {
  id: string;
  createdAt: Date;
  lastUsedAt: Date;
  ip: string | null;
  userAgent: string | null;
  /** How the session began (an operator's impersonation says `impersonation`). */
  amr: string[];
}

/** The user's live sessions, most recently used first. */
export async function listUserSessions(db: Queryable, userId: string, now: Date): Promise<SessionRow[]> {
  const { rows } = await db.query<SessionRow>(
    `SELECT id, created_at AS "createdAt", coalesce(last_used_at, created_at) AS "lastUsedAt", ip, user_agent AS "userAgent", amr
       FROM walgate.sessions
      WHERE user_id = $1 AND revoked_at IS NULL AND expires_at > $2 AND absolute_expires_at > $2
      ORDER BY coalesce(last_used_at, created_at) DESC, id
      LIMIT 500`,
    [userId, now],
  );
  return rows;
}

/** When a live session of this user began — when what its `amr` says was proven (no session is stepped up). */
export async function sessionStartedAt(db: Queryable, userId: string, sessionId: string): Promise<Date | undefined> {
  const { rows } = await db.query<{ created_at: Date }>(
    'SELECT created_at FROM walgate.sessions WHERE id = $1 AND user_id = $2 AND revoked_at IS NULL',
    [sessionId, userId],
  );
  return rows[0]?.created_at;
}

/**
 * The management token acting in an impersonation session: its start's audit row names it (the
 * user's rows by the user index; an impersonation session lives an hour at most).
 */
export async function impersonatingOperator(db: Queryable, userId: string, sessionId: string): Promise<string | null> {
  const { rows } = await db.query<{ actor: string | null }>(
    `SELECT actor FROM walgate.auth_events WHERE user_id = $1 AND session_id = $2 AND type = 'user.impersonation_started' LIMIT 1`,
    [userId, sessionId],
  );
  return rows[0]?.actor ?? null;
}
