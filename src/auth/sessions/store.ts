import { randomUUID } from 'node:crypto';
import { hashToken, randomToken } from '../../core/crypto/tokens.js';
import type { Queryable } from '../../core/db/pool.js';
import type { PresentedToken } from './decision.js';
import { INSERT as AUDIT_INSERT, parameters as eventParameters, type NewAuthEvent } from '../events/append.js';

// Sessions and their refresh tokens. A session is one login on one device; its id is the access
// tokens' `sid`. Refresh tokens are opaque 256-bit values, stored hashed; each exchange marks the
// token used and issues the next one of the session (decision.ts says when an exchange is allowed).

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

const later = (now: Date, seconds: number) => new Date(now.getTime() + seconds * 1000);

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

export interface StoredToken extends PresentedToken {
  sessionId: string;
  userId: string;
}

/** The presented token, whether its successor was used, and its session, if it belongs to this environment. */
export async function findRefreshToken(
  db: Queryable,
  token: string,
  successor: string,
  scope: SessionScope,
): Promise<StoredToken | undefined> {
  const { rows } = await db.query(
    `SELECT rt.used_at, rt.expires_at, nx.used_at AS successor_used_at,
            s.id, s.user_id, s.revoked_at, s.expires_at AS session_expires_at, s.absolute_expires_at
       FROM walgate.refresh_tokens rt JOIN walgate.sessions s ON s.id = rt.session_id
       LEFT JOIN walgate.refresh_tokens nx ON nx.token_hash = $4 AND nx.session_id = rt.session_id
      WHERE rt.token_hash = $1 AND s.project_id = $2 AND s.environment = $3`,
    [hashToken(token), scope.projectId, scope.name, hashToken(successor)],
  );
  const r = rows[0];
  if (!r) return undefined;
  return {
    sessionId: r.id,
    userId: r.user_id,
    usedAt: r.used_at,
    successorUsedAt: r.successor_used_at ?? null,
    expiresAt: r.expires_at,
    session: { revokedAt: r.revoked_at, expiresAt: r.session_expires_at, absoluteExpiresAt: r.absolute_expires_at },
  };
}

export interface Exchanged {
  sessionId: string;
  userId: string;
  email: string;
  /** Operators' data on the user, copied into the access token. */
  appMetadata: Record<string, unknown>;
  /** How the user proved who they are when the session began (or was stepped up). */
  amr: string[];
  refreshToken: string;
  /** The organization the session has switched to (null: none); its membership is looked up afresh. */
  activeOrganizationId: string | null;
}

/**
 * The first exchange of a token: marks it used, moves the session's idle end and stores `next`
 * (its successor) in one statement — provided the token is unused and unexpired and its session
 * live and of this environment. Undefined otherwise (a concurrent exchange got there first, or
 * the token is worth nothing): the caller reads the token and decides (decision.ts).
 */
export async function exchangeRefreshToken(
  db: Queryable,
  token: string,
  next: string,
  scope: SessionScope,
  client: SessionClient,
  idleSeconds: number,
  now: Date,
): Promise<Exchanged | undefined> {
  // Named: prepared once per connection, so the hot path skips parsing and planning this CTE.
  const { rows } = await db.query<ExchangeRow>({
    name: 'walgate_refresh_exchange',
    text: `WITH used AS (
       UPDATE walgate.refresh_tokens rt SET used_at = $2
         FROM walgate.sessions s
        WHERE rt.token_hash = $1 AND rt.used_at IS NULL AND rt.expires_at > $2
          AND s.id = rt.session_id AND s.revoked_at IS NULL AND s.expires_at > $2 AND s.absolute_expires_at > $2
          AND s.project_id = $7 AND s.environment = $8
          AND NOT EXISTS (SELECT 1 FROM walgate.users u WHERE u.id = s.user_id AND u.disabled_at IS NOT NULL)
        RETURNING s.id AS session_id, s.user_id, s.amr, s.active_organization_id, least($3::timestamptz, s.absolute_expires_at) AS expires_at
     ), extended AS (
       UPDATE walgate.sessions s SET expires_at = used.expires_at, last_used_at = $2, ip = $5, user_agent = coalesce($6, s.user_agent)
         FROM used WHERE s.id = used.session_id
     ), issued AS (
       INSERT INTO walgate.refresh_tokens (token_hash, session_id, issued_at, expires_at) SELECT $4, session_id, $2, expires_at FROM used
     )
     SELECT used.session_id, used.user_id, used.amr, used.active_organization_id, u.email, u.app_metadata
       FROM used JOIN walgate.users u ON u.id = used.user_id`,
    values: [
      hashToken(token),
      now,
      later(now, idleSeconds),
      hashToken(next),
      client.ip,
      client.userAgent ?? null,
      scope.projectId,
      scope.name,
    ],
  });
  const r = rows[0];
  return r && exchanged(r, next);
}

interface ExchangeRow {
  session_id: string;
  user_id: string;
  email: string;
  app_metadata: Record<string, unknown>;
  amr: string[];
  active_organization_id: string | null;
}

const exchanged = (r: ExchangeRow, refreshToken: string): Exchanged => ({
  sessionId: r.session_id,
  userId: r.user_id,
  email: r.email,
  appMetadata: r.app_metadata,
  amr: r.amr,
  refreshToken,
  activeOrganizationId: r.active_organization_id ?? null,
});

/**
 * The caller's live session switched to an organization (null: to none), with a new refresh token:
 * its unused ones count as used from now, as after an exchange, so the session keeps one line of
 * tokens (an old one presented again falls under the reuse rules of decision.ts). The membership
 * was checked by the caller, in the same transaction (`db`). Undefined: no such live session.
 */
export async function switchSessionOrganization(
  db: Queryable,
  sessionId: string,
  userId: string,
  scope: SessionScope,
  organizationId: string | null,
  now: Date,
): Promise<Exchanged | undefined> {
  const next = randomToken();
  const { rows } = await db.query<ExchangeRow>(
    `WITH s AS (
       UPDATE walgate.sessions s SET active_organization_id = $3, last_used_at = $4
        WHERE s.id = $1 AND s.user_id = $2 AND s.revoked_at IS NULL AND s.expires_at > $4 AND s.absolute_expires_at > $4
          AND s.project_id = $5 AND s.environment = $6
       RETURNING s.id, s.user_id, s.amr, s.active_organization_id, s.expires_at
     ), spent AS (
       UPDATE walgate.refresh_tokens SET used_at = $4 WHERE used_at IS NULL AND session_id IN (SELECT id FROM s)
     ), issued AS (
       INSERT INTO walgate.refresh_tokens (token_hash, session_id, issued_at, expires_at) SELECT $7, id, $4, expires_at FROM s
     )
     SELECT s.id AS session_id, s.user_id, s.amr, s.active_organization_id, u.email, u.app_metadata
       FROM s JOIN walgate.users u ON u.id = s.user_id`,
    [sessionId, userId, organizationId, now, scope.projectId, scope.name, hashToken(next)],
  );
  return rows[0] && exchanged(rows[0], next);
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
 * A used token's exchange within the grace (decision.ts said so): its session and user, to hand
 * out the same successor again — provided the token was first used at or after `usedSince`, the
 * successor is still unused and unexpired, the session live and of this environment and its user
 * not disabled. Nothing is written: the session has one chain, whoever asks twice.
 */
export async function findGraceSuccessor(
  db: Queryable,
  token: string,
  successor: string,
  usedSince: Date,
  scope: SessionScope,
  now: Date,
): Promise<Exchanged | undefined> {
  const { rows } = await db.query(
    `SELECT s.id AS session_id, s.user_id, s.amr, s.active_organization_id, u.email, u.app_metadata
       FROM walgate.refresh_tokens rt
       JOIN walgate.sessions s ON s.id = rt.session_id
       JOIN walgate.refresh_tokens nx ON nx.token_hash = $2 AND nx.session_id = s.id AND nx.used_at IS NULL AND nx.expires_at > $3
       JOIN walgate.users u ON u.id = s.user_id AND u.disabled_at IS NULL
      WHERE rt.token_hash = $1 AND rt.used_at >= $4
        AND s.revoked_at IS NULL AND s.expires_at > $3 AND s.absolute_expires_at > $3
        AND s.project_id = $5 AND s.environment = $6`,
    [hashToken(token), hashToken(successor), now, usedSince, scope.projectId, scope.name],
  );
  const r = rows[0];
  return (
    r && {
      sessionId: r.session_id,
      userId: r.user_id,
      email: r.email,
      appMetadata: r.app_metadata,
      amr: r.amr,
      activeOrganizationId: r.active_organization_id ?? null,
      refreshToken: successor,
    }
  );
}

/**
 * Takes back an exchange whose pair could not be issued (the claims function failed): the token
 * issued is deleted and the presented one is unused again — unless it had been used before (a grace
 * exchange), whose first use stands. The client may retry once the function is fixed, without the
 * retry counting as a reuse.
 */
export async function undoExchange(db: Queryable, presented: string, issued: string, usedAt: Date): Promise<void> {
  await db.query(
    `WITH gone AS (DELETE FROM walgate.refresh_tokens WHERE token_hash = $2)
     UPDATE walgate.refresh_tokens SET used_at = NULL WHERE token_hash = $1 AND used_at = $3`,
    [hashToken(presented), hashToken(issued), usedAt],
  );
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
