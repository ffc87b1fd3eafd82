import type { Queryable } from '../core/db/pool.js';

// Every statement retention runs: one batch of one table each, a single short statement that
// commits on its own. A batch picks its rows through an index range (sql/006_retention.sql) with
// FOR UPDATE SKIP LOCKED: several processes prune at once without waiting on each other, and a
// row that anyone else holds (a worker recording an attempt, a replay) is left for the next pass
// instead of being waited for. `= ANY (ARRAY(...))` is an index lookup per picked row; a join is
// planned as a scan. The delivery engine's rewrite adapts the statements here, in one place.

export type FinishedStatus = 'delivered' | 'dead';

// Delivered history counts from its delivery, dead letters from their capture (the retry
// schedule is minutes, the window weeks). Literal statuses, so the planner matches each partial index.
const FINISHED_BEFORE: Record<FinishedStatus, string> = {
  delivered: `status = 'delivered' AND delivered_at < $1 ORDER BY delivered_at`,
  dead: `status = 'dead' AND created_at < $1 ORDER BY created_at`,
};

/**
 * Removes up to `limit` of the oldest finished deliveries of one status older than `before`, with
 * their attempts. Pending and retrying deliveries are never picked, whatever their age.
 */
export async function pruneDeliveries(
  db: Queryable,
  status: FinishedStatus,
  before: Date,
  limit: number,
): Promise<{ deliveries: number; attempts: number }> {
  const { rows } = await db.query(
    `WITH doomed AS (
       SELECT id FROM walgate.deliveries WHERE ${FINISHED_BEFORE[status]} LIMIT $2 FOR UPDATE SKIP LOCKED
     ), attempts AS (
       -- Deleted here rather than by the foreign key's cascade only so that they can be counted.
       DELETE FROM walgate.delivery_attempts WHERE delivery_id = ANY (ARRAY(SELECT id FROM doomed)) RETURNING 1
     ), gone AS (
       DELETE FROM walgate.deliveries WHERE id = ANY (ARRAY(SELECT id FROM doomed)) RETURNING 1
     )
     SELECT (SELECT count(*)::int FROM gone) AS deliveries, (SELECT count(*)::int FROM attempts) AS attempts`,
    [before, limit],
  );
  return rows[0];
}

/** Where a pass over the events stands: the last (committed_at, id) it looked at. */
export interface EventCursor {
  /** committed_at as Postgres prints it: a Date would drop the microseconds, and the cursor would fall behind itself. */
  committedAt: string;
  id: string;
}

export const EVENTS_START: EventCursor = { committedAt: '-infinity', id: '' };

/**
 * Looks at the next `limit` events committed before `before` (after the cursor, oldest first) and
 * removes those no pending, retrying or dead delivery needs. Delivered deliveries do not hold
 * their event: their payload goes with the event's age (a detail then shows `payload: null`).
 * The cursor moves past the events that are kept, so one pass reads each old event once.
 */
export async function pruneEvents(
  db: Queryable,
  before: Date,
  after: EventCursor,
  limit: number,
): Promise<{ scanned: number; removed: number; last: EventCursor | null }> {
  const { rows } = await db.query(
    `WITH page AS (
       SELECT id, committed_at FROM walgate.events
        WHERE committed_at < $1 AND (committed_at, id) > ($2::timestamptz, $3::text)
        ORDER BY committed_at, id LIMIT $4
     ), doomed AS (
       SELECT e.id FROM walgate.events e
        WHERE e.id = ANY (ARRAY(SELECT id FROM page))
          AND NOT EXISTS (SELECT 1 FROM walgate.deliveries d WHERE d.event_id = e.id AND d.status IN ('pending', 'retrying', 'dead'))
        FOR UPDATE SKIP LOCKED
     ), gone AS (
       DELETE FROM walgate.events WHERE id = ANY (ARRAY(SELECT id FROM doomed)) RETURNING 1
     ), last AS (
       SELECT committed_at::text, id FROM page ORDER BY committed_at DESC, id DESC LIMIT 1
     )
     SELECT (SELECT count(*)::int FROM page) AS scanned, (SELECT count(*)::int FROM gone) AS removed,
            (SELECT committed_at FROM last) AS last_at, (SELECT id FROM last) AS last_id`,
    [before, after.committedAt, after.id, limit],
  );
  const r = rows[0];
  return { scanned: r.scanned, removed: r.removed, last: r.last_id === null ? null : { committedAt: r.last_at, id: r.last_id } };
}

/**
 * Removes sessions that can no longer matter, with their refresh tokens: expired, and so long ago
 * that the last access token issued for them has expired too (/auth/me reads the session). Used
 * refresh tokens stay as long as their session, so a replayed one is still recognised and revokes
 * the family.
 */
export async function pruneSessions(db: Queryable, now: Date, limit: number): Promise<{ sessions: number; refreshTokens: number }> {
  const { rows } = await db.query(
    `WITH doomed AS (
       SELECT s.id FROM walgate.sessions s
        WHERE s.expires_at < $1
          AND s.expires_at + make_interval(secs => coalesce((SELECT e.access_token_ttl_seconds FROM walgate.environments e
                                                              WHERE e.project_id = s.project_id AND e.name = s.environment), 0)) < $1
        ORDER BY s.expires_at LIMIT $2 FOR UPDATE SKIP LOCKED
     ), tokens AS (
       DELETE FROM walgate.refresh_tokens WHERE session_id = ANY (ARRAY(SELECT id FROM doomed)) RETURNING 1
     ), gone AS (
       DELETE FROM walgate.sessions WHERE id = ANY (ARRAY(SELECT id FROM doomed)) RETURNING 1
     )
     SELECT (SELECT count(*)::int FROM gone) AS sessions, (SELECT count(*)::int FROM tokens) AS "refreshTokens"`,
    [now, limit],
  );
  return rows[0];
}

/** Expired one-time codes (a code is also deleted when it is used). */
export const pruneVerificationCodes = (db: Queryable, now: Date, limit: number): Promise<number> =>
  // By ctid (a row's place in the table): a row-valued IN on the two-column key is planned as a
  // hash join over the whole table. The lock keeps each picked row where it is until the delete.
  deleteOldest(db, { table: 'walgate.verification_codes', key: 'ctid', order: 'expires_at', where: 'expires_at < $1' }, now, limit);

/** Revocation entries past the expiry of the last access token they refuse. */
export const pruneRevokedSessions = (db: Queryable, now: Date, limit: number): Promise<number> =>
  deleteOldest(db, { table: 'walgate.revoked_sessions', key: 'session_id', order: 'expires_at', where: 'expires_at <= $1' }, now, limit);

/** Rate-limit counters whose window is over (the next request in that window starts a new row). */
export const pruneRateLimits = (db: Queryable, now: Date, limit: number): Promise<number> =>
  deleteOldest(db, { table: 'walgate.rate_limits', key: 'key', order: 'expire', where: 'expire < $1' }, now.getTime(), limit);

/** The time retention counts from, of the oldest kept row of each history table (null when empty). */
export async function oldestHistory(db: Queryable): Promise<Record<'delivered' | 'dead' | 'attempts' | 'events', Date | null>> {
  const { rows } = await db.query(
    `SELECT (SELECT min(delivered_at) FROM walgate.deliveries WHERE status = 'delivered') AS delivered,
            (SELECT min(created_at) FROM walgate.deliveries WHERE status = 'dead') AS dead,
            -- attempts are inserted in time order: the lowest id is the oldest
            (SELECT started_at FROM walgate.delivery_attempts ORDER BY id LIMIT 1) AS attempts,
            (SELECT min(committed_at) FROM walgate.events) AS events`,
  );
  return rows[0];
}

/** The earliest expiry among kept rows of each expiring auth table (null when empty). */
export async function earliestAuthExpiry(
  db: Queryable,
): Promise<Record<'sessions' | 'verificationCodes' | 'revokedSessions' | 'rateLimits', Date | null>> {
  const { rows } = await db.query(
    `SELECT (SELECT min(expires_at) FROM walgate.sessions) AS sessions,
            (SELECT min(expires_at) FROM walgate.verification_codes) AS "verificationCodes",
            (SELECT min(expires_at) FROM walgate.revoked_sessions) AS "revokedSessions",
            (SELECT to_timestamp(min(expire) / 1000.0) FROM walgate.rate_limits) AS "rateLimits"`,
  );
  return rows[0];
}

/**
 * A paused subscription's unfinished deliveries captured before `before` become dead letters
 * (visible, counted, replayable, pruned with the dead): a paused backlog is bounded by age. Up to
 * `limit` per call, oldest first, skipping rows someone holds.
 */
export async function expirePausedBacklog(db: Queryable, before: Date, limit: number): Promise<number> {
  const { rowCount } = await db.query(
    `UPDATE walgate.deliveries SET status = 'dead', last_error = 'subscription paused longer than its backlog is kept'
      WHERE id = ANY (ARRAY(
        SELECT d.id FROM walgate.webhooks w JOIN walgate.deliveries d ON d.webhook_id = w.id
         WHERE NOT w.active AND d.status IN ('pending', 'retrying') AND d.created_at < $1
         ORDER BY d.created_at LIMIT $2 FOR UPDATE OF d SKIP LOCKED))`,
    [before, limit],
  );
  return rowCount ?? 0;
}

/** Audit rows written before `before` (AUTH_EVENTS_RETENTION_MS). */
export const pruneAuthEvents = (db: Queryable, before: Date, limit: number): Promise<number> =>
  deleteOldest(db, { table: 'walgate.auth_events', key: 'id', order: 'created_at', where: 'created_at < $1' }, before, limit);

/** Operational events written before `before` (OPERATIONS_RETENTION_MS). */
export const pruneOperations = (db: Queryable, before: Date, limit: number): Promise<number> =>
  deleteOldest(db, { table: 'walgate.operations', key: 'id', order: 'created_at', where: 'created_at < $1' }, before, limit);

/** Per-minute delivery counts (the health rollup) of minutes before `before`. */
export const pruneDeliveryMinutes = (db: Queryable, before: Date, limit: number): Promise<number> =>
  deleteOldest(db, { table: 'walgate.delivery_minutes', key: 'ctid', order: 'minute', where: 'minute < $1' }, before, limit);

/** Sent and dead mails written before `before` (MAIL_RETENTION_MS); queued ones stay until they end. */
export const pruneMail = (db: Queryable, before: Date, limit: number): Promise<number> =>
  deleteOldest(
    db,
    { table: 'walgate.mail_outbox', key: 'id', order: 'created_at', where: "state <> 'queued' AND created_at < $1" },
    before,
    limit,
  );

/** What deleteOldest removes: rows of `table` matching `where` ($1: the bound), oldest by `order` first. */
interface Expiring {
  table: string;
  /** A column that finds one row by an index (or ctid). */
  key: string;
  order: string;
  where: string;
}

/**
 * Up to `limit` of the oldest rows past their bound, in one short statement: the rows are picked
 * through an index range and locked (rows someone else holds are skipped), then deleted by key.
 * The table and columns are this file's constants, never input.
 */
async function deleteOldest(db: Queryable, t: Expiring, bound: Date | number, limit: number): Promise<number> {
  const { rowCount } = await db.query(
    `DELETE FROM ${t.table} WHERE ${t.key} = ANY (ARRAY(
       SELECT ${t.key} FROM ${t.table} WHERE ${t.where} ORDER BY ${t.order} LIMIT $2 FOR UPDATE SKIP LOCKED))`,
    [bound, limit],
  );
  return rowCount ?? 0;
}
