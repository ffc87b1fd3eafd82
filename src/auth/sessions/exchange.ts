import { hashToken, randomToken } from '../../core/crypto/tokens.js';
import type { Queryable } from '../../core/db/pool.js';
import type { Membership, MembershipColumns } from '../active-organization.js';
import type { PresentedToken } from './decision.js';
import { later, type SessionClient, type SessionScope } from './store.js';

// A session's next refresh token: a refresh token's exchange (the first one in one statement),
// the reads that decide the others (decision.ts), a grace exchange's successor, the undo of an
// exchange whose pair could not be issued, and a switch of the session's organization.

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
  /** That membership as the exchange read it (null: gone); undefined when not read with it. */
  membership?: Membership | null;
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
  /** The active organization's membership query (active-organization.ts), read in this statement. */
  membershipSql?: (columns: MembershipColumns) => string,
): Promise<Exchanged | undefined> {
  const membership = membershipSql
    ? {
        columns: ', mem.membership_id, mem.role AS membership_role',
        join: `LEFT JOIN LATERAL (${membershipSql({ organization: 'used.active_organization_id', user: 'used.user_id', project: '$7', environment: '$8' })}) mem ON true`,
      }
    : { columns: '', join: '' };
  // Named: prepared once per connection, so the hot path skips parsing and planning this CTE.
  const { rows } = await db.query<ExchangeRow>({
    name: membershipSql ? 'walgate_refresh_exchange_org' : 'walgate_refresh_exchange',
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
     SELECT used.session_id, used.user_id, used.amr, used.active_organization_id, u.email, u.app_metadata${membership.columns}
       FROM used JOIN walgate.users u ON u.id = used.user_id ${membership.join}`,
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
  if (!r) return undefined;
  const result = exchanged(r, next);
  if (membershipSql && r.active_organization_id)
    result.membership = r.membership_id ? { membershipId: r.membership_id, role: r.membership_role! } : null;
  return result;
}

interface ExchangeRow {
  session_id: string;
  user_id: string;
  email: string;
  app_metadata: Record<string, unknown>;
  amr: string[];
  active_organization_id: string | null;
  membership_id?: string | null;
  membership_role?: string | null;
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
