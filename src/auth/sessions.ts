import { randomUUID } from 'node:crypto';
import { hashToken, randomToken } from '../core/crypto/tokens.js';
import { withTransaction, type Pool, type Queryable } from '../core/db/pool.js';
import { append } from './events/append.js';
import { AUTH_EVENT } from './events/kinds.js';

// Sessions and their refresh tokens. A session is one login; its id is the access tokens' `sid`.
// Refresh tokens are opaque 256-bit values, stored hashed, single use: each exchange retires the
// token and issues the next in the same family. A retired token presented again means the family
// leaked, and the whole session is revoked.

/** The environment a session belongs to (an `Environment` will do). */
export interface SessionScope {
  projectId: string;
  name: string;
}

export interface NewSession {
  sessionId: string;
  refreshToken: string;
  expiresAt: Date;
}

export async function createSession(
  db: Queryable,
  userId: string,
  scope: SessionScope,
  ttlSeconds: number,
  now: Date,
): Promise<NewSession> {
  const sessionId = randomUUID();
  const expiresAt = new Date(now.getTime() + ttlSeconds * 1000);
  await db.query(
    `INSERT INTO walgate.sessions (id, user_id, project_id, environment, created_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6)`,
    [sessionId, userId, scope.projectId, scope.name, now, expiresAt],
  );
  const refreshToken = await insertRefreshToken(db, sessionId, expiresAt, now);
  return { sessionId, refreshToken, expiresAt };
}

async function insertRefreshToken(db: Queryable, sessionId: string, expiresAt: Date, now: Date): Promise<string> {
  const token = randomToken();
  await db.query(`INSERT INTO walgate.refresh_tokens (token_hash, session_id, issued_at, expires_at) VALUES ($1, $2, $3, $4)`, [
    hashToken(token),
    sessionId,
    now,
    expiresAt,
  ]);
  return token;
}

export type RefreshOutcome =
  | {
      kind: 'rotated';
      sessionId: string;
      userId: string;
      email: string;
      appMetadata: Record<string, unknown>;
      refreshToken: string;
      expiresAt: Date;
    }
  | { kind: 'reused'; sessionId: string }
  | { kind: 'invalid' };

/**
 * Exchanges a refresh token in one statement: marking it used, extending the session and issuing
 * the next token commit together. Marking it used is the single point of decision: of concurrent
 * exchanges exactly one finds it unused. The others — like any later replay — find it used, and
 * revoke the session.
 */
export async function rotateRefreshToken(
  pool: Pool,
  token: string,
  scope: SessionScope,
  ttlSeconds: number,
  now: Date,
): Promise<RefreshOutcome> {
  const hash = hashToken(token);
  const next = randomToken();
  const expiresAt = new Date(now.getTime() + ttlSeconds * 1000);
  const { rows } = await pool.query(
    `WITH used AS (
       UPDATE walgate.refresh_tokens rt SET used_at = $2
         FROM walgate.sessions s
        WHERE rt.token_hash = $1 AND rt.used_at IS NULL AND rt.expires_at > $2
          AND s.id = rt.session_id AND s.revoked_at IS NULL AND s.project_id = $3 AND s.environment = $4
        RETURNING s.id AS session_id, s.user_id
     ), extended AS (
       UPDATE walgate.sessions s SET expires_at = $5 FROM used WHERE s.id = used.session_id
     ), issued AS (
       INSERT INTO walgate.refresh_tokens (token_hash, session_id, issued_at, expires_at) SELECT $6, session_id, $2, $5 FROM used
     )
     SELECT used.session_id, used.user_id, u.email, u.app_metadata FROM used JOIN walgate.users u ON u.id = used.user_id`,
    [hash, now, scope.projectId, scope.name, expiresAt, hashToken(next)],
  );
  if (rows[0])
    return {
      kind: 'rotated',
      sessionId: rows[0].session_id,
      userId: rows[0].user_id,
      email: rows[0].email,
      appMetadata: rows[0].app_metadata,
      refreshToken: next,
      expiresAt,
    };
  return withTransaction(pool, async (c) => {
    const { rows: seen } = await c.query(
      `SELECT s.id, s.user_id, s.revoked_at, rt.used_at FROM walgate.refresh_tokens rt JOIN walgate.sessions s ON s.id = rt.session_id
        WHERE rt.token_hash = $1 AND s.project_id = $2 AND s.environment = $3`,
      [hash, scope.projectId, scope.name],
    );
    if (seen[0]?.used_at) {
      await revokeSessionRow(c, seen[0].id, 'refresh token reused', now);
      // An event when this revokes the session (not for a token of a session that had ended).
      if (!seen[0].revoked_at)
        await append(
          c,
          scope,
          { type: AUTH_EVENT.sessionRevoked, userId: seen[0].user_id, sessionId: seen[0].id, details: { reason: 'refresh token reused' } },
          now,
        );
      return { kind: 'reused', sessionId: seen[0].id };
    }
    return { kind: 'invalid' };
  });
}

export async function revokeSessionRow(db: Queryable, sessionId: string, reason: string, now: Date): Promise<void> {
  await db.query(
    `UPDATE walgate.sessions SET revoked_at = coalesce(revoked_at, $2), revoked_reason = coalesce(revoked_reason, $3) WHERE id = $1`,
    [sessionId, now, reason],
  );
  await db.query('UPDATE walgate.refresh_tokens SET used_at = coalesce(used_at, $2) WHERE session_id = $1', [sessionId, now]);
}

/** Revokes every live session of a user; returns their ids (for the revocation list). */
export async function revokeUserSessions(db: Queryable, userId: string, reason: string, now: Date): Promise<string[]> {
  const { rows } = await db.query<{ id: string }>(
    `UPDATE walgate.sessions SET revoked_at = $2, revoked_reason = $3 WHERE user_id = $1 AND revoked_at IS NULL RETURNING id`,
    [userId, now, reason],
  );
  await db.query(
    `UPDATE walgate.refresh_tokens SET used_at = $2 WHERE used_at IS NULL AND session_id IN (SELECT id FROM walgate.sessions WHERE user_id = $1)`,
    [userId, now],
  );
  return rows.map((r) => r.id);
}
