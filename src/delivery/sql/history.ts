import type { Queryable } from '../../core/db/pool.js';
import { PAYLOAD_COLUMNS, renderPayload, type PayloadRow } from '../payload.js';
import { DELIVERIES_CHANNEL } from './queue.js';

// What the management API, the console and the CLI show of deliveries, and what an operator may do
// with them (replay dead letters, retry one). Every reader goes through here and gets camelCase
// views, never rows. The delivery worker owns every other write to walgate.deliveries.

export type DeliveryStatus = 'pending' | 'retrying' | 'delivered' | 'dead';

export interface DeliveryView {
  id: string;
  eventId: string;
  event: string;
  status: DeliveryStatus;
  httpStatus: number | null;
  attempts: number;
  lastError: string | null;
  nextAttemptAt: string | null;
  deliveredAt: string | null;
  createdAt: string;
  /** A row-ordered dead letter of an onDead "hold" subscription: its row's later changes wait behind it. */
  holdsRow: boolean;
  /** The batch it was sent in (its webhook-id, docs/webhooks.md: Batching); null when sent alone or not yet. */
  batchId: string | null;
}

/** One attempt as the delivery log shows it. */
export interface AttemptView {
  /** `request`: sent to the receiver; `wait`: held by the endpoint's open breaker — no request, no attempt spent. */
  kind: 'request' | 'wait';
  attempt: number;
  startedAt: string;
  durationMs: number;
  httpStatus: number | null;
  error: string | null;
  /** The first KiB of the answer as text; null without an answer. */
  responseBody: string | null;
}

export type DeliveryDetail = DeliveryView & {
  attemptLog: AttemptView[];
  /** The body as sent: kept on the delivery's row (WEBHOOK_KEEP_PAYLOADS), or rendered from its event while that is stored; else null. */
  payload: object | null;
  /** The same body as text, byte for byte as it was signed and sent (`payload` re-parsed loses `19.90`'s zero); null with it. */
  body: string | null;
  /** The request headers of its latest attempt, signatures left out and custom values masked; null when not kept. */
  requestHeaders: Record<string, string> | null;
  /** The headers of the latest answer, kept with the request; null when not kept or never answered. */
  responseHeaders: Record<string, string> | null;
};

export const DELIVERY_COLUMNS =
  'd.id, d.event_id, d.event_type, d.status, d.http_status, d.attempts, d.last_error, d.next_attempt_at, d.delivered_at, d.created_at, d.holds_row, d.batch_id';

/** The first attempt, when the stream folded it into the delivery's row. */
interface FoldedAttempt {
  first_attempt_started_at: Date | null;
  first_attempt_duration_ms: number | null;
  first_attempt_response_body: string | null;
}

/** What the delivery's row kept of its request. */
interface KeptColumns {
  kept_payload: string | null;
  request_headers: Record<string, string> | null;
  response_headers: Record<string, string> | null;
}

export interface DeliveryRow {
  id: string;
  event_id: string;
  event_type: string;
  status: DeliveryStatus;
  http_status: number | null;
  attempts: number;
  last_error: string | null;
  next_attempt_at: Date;
  delivered_at: Date | null;
  created_at: Date;
  holds_row: boolean;
  batch_id: string | null;
}

export function deliveryView(r: DeliveryRow): DeliveryView {
  return {
    id: r.id,
    eventId: r.event_id,
    event: r.event_type,
    status: r.status,
    httpStatus: r.http_status,
    attempts: r.attempts,
    lastError: r.last_error,
    // Only an unfinished delivery has a next attempt.
    nextAttemptAt: r.status === 'pending' || r.status === 'retrying' ? r.next_attempt_at.toISOString() : null,
    deliveredAt: r.delivered_at ? r.delivered_at.toISOString() : null,
    createdAt: r.created_at.toISOString(),
    holdsRow: r.holds_row,
    batchId: r.batch_id,
  };
}

/** The newest deliveries of a subscription, newest first. */
export async function recentDeliveries(db: Queryable, webhookId: string, limit = 50): Promise<DeliveryView[]> {
  return listDeliveries(db, webhookId, { limit });
}

export interface DeliveryQuery {
  status?: DeliveryStatus;
  /** Created at or after. */
  since?: Date;
  /** Created before. */
  until?: Date;
  /** The last delivery of the previous page. */
  after?: { createdAt: Date; id: string };
  limit: number;
}

/** A page of a subscription's deliveries, newest first (through deliveries_recent). */
export async function listDeliveries(db: Queryable, webhookId: string, q: DeliveryQuery): Promise<DeliveryView[]> {
  const { rows } = await db.query<DeliveryRow>(
    `SELECT ${DELIVERY_COLUMNS} FROM walgate.deliveries d
      WHERE d.webhook_id = $1 AND ($2::text IS NULL OR d.status = $2)
        AND ($3::timestamptz IS NULL OR d.created_at >= $3) AND ($4::timestamptz IS NULL OR d.created_at < $4)
        AND ($5::timestamptz IS NULL OR (d.created_at, d.id) < ($5, $6))
      ORDER BY d.created_at DESC, d.id DESC LIMIT $7`,
    [webhookId, q.status ?? null, q.since ?? null, q.until ?? null, q.after?.createdAt ?? null, q.after?.id ?? null, q.limit],
  );
  return rows.map(deliveryView);
}

/** One delivery with every attempt (oldest first, replays included) and its payload while kept. */
export async function getDelivery(db: Queryable, webhookId: string, deliveryId: string): Promise<DeliveryDetail | undefined> {
  const { rows } = await db.query<DeliveryRow & PayloadRow & FoldedAttempt & KeptColumns & { kept: boolean }>(
    // PAYLOAD_COLUMNS first: its e.id AS event_id is null once the event is gone, d.event_id is not.
    `SELECT ${PAYLOAD_COLUMNS}, e.id IS NOT NULL AS kept, ${DELIVERY_COLUMNS}, d.first_attempt_started_at, d.first_attempt_duration_ms,
            d.first_attempt_response_body, d.payload AS kept_payload, d.request_headers, d.response_headers
       FROM walgate.deliveries d JOIN walgate.webhooks w ON w.id = d.webhook_id LEFT JOIN walgate.events e ON e.id = d.event_id
      WHERE d.id = $1 AND d.webhook_id = $2`,
    [deliveryId, webhookId],
  );
  const r = rows[0];
  if (!r) return undefined;
  const attempts = await db.query<{
    kind: 'request' | 'wait';
    attempt: number;
    started_at: Date;
    duration_ms: number;
    http_status: number | null;
    error: string | null;
    response_body: string | null;
  }>(
    `SELECT kind, attempt, started_at, duration_ms, http_status, error, response_body FROM walgate.delivery_attempts
      WHERE delivery_id = $1 ORDER BY id`,
    [deliveryId],
  );
  // Delivered at its first attempt, the delivery has no row for that attempt: the stream folds it
  // into the delivery's own row (one write per delivered change). A retry's attempts follow it.
  const folded: AttemptView[] =
    r.first_attempt_started_at
      ? [
          {
            kind: 'request' as const,
            attempt: 1,
            startedAt: r.first_attempt_started_at.toISOString(),
            durationMs: r.first_attempt_duration_ms ?? 0,
            httpStatus: r.http_status,
            error: null,
            responseBody: r.first_attempt_response_body,
          },
        ]
      : [];
  const body = r.kept_payload ?? (r.kept ? renderPayload(r) : null);
  return {
    ...deliveryView(r),
    attemptLog: [
      ...folded,
      ...attempts.rows.map((a) => ({
        kind: a.kind,
        attempt: a.attempt,
        startedAt: a.started_at.toISOString(),
        durationMs: a.duration_ms,
        httpStatus: a.http_status,
        error: a.error,
        responseBody: a.response_body,
      })),
    ],
    payload: body === null ? null : (JSON.parse(body) as object),
    body,
    requestHeaders: r.request_headers,
    responseHeaders: r.response_headers,
  };
}

/**
 * Sends one finished delivery (delivered or dead) again now: it becomes pending and due, and its
 * attempts count on from where they stood, so the new attempts join its log. Undefined when there
 * is no such delivery; 'unfinished' when it is pending or retrying (a worker may hold it: moving
 * its due time would void that worker's claim).
 */
export async function retryDelivery(
  db: Queryable,
  webhookId: string,
  deliveryId: string,
  now: Date,
): Promise<DeliveryView | 'unfinished' | 'payload-gone' | undefined> {
  // Only a delivery whose body is at hand can be sent again: kept on its row (WEBHOOK_KEEP_PAYLOADS),
  // or its event still stored. With keeping off, one delivered at its first attempt has neither.
  const { rows } = await db.query<DeliveryRow>(
    // Its row keys go (row ordering): sent again now, it neither waits for the row's later
    // changes nor holds them back (docs/webhooks.md, Ordering).
    `UPDATE walgate.deliveries d SET status = 'pending', next_attempt_at = $3, schedule_started_at = $3,
             -- A dead letter that holds its row (onDead "hold") stays its row's head: sent again
             -- first, its row's later changes still behind it. Any other goes behind nothing.
             order_key = CASE WHEN d.holds_row THEN d.order_key END, order_key_old = CASE WHEN d.holds_row THEN d.order_key_old END,
             holds_row = false, batch_id = NULL -- alone (or in a new batch): never under its batch's id with fewer events
      WHERE d.id = $1 AND d.webhook_id = $2 AND d.status IN ('delivered', 'dead')
        AND (d.payload IS NOT NULL OR EXISTS (SELECT 1 FROM walgate.events e WHERE e.id = d.event_id))
      RETURNING ${DELIVERY_COLUMNS}`,
    [deliveryId, webhookId, now],
  );
  if (rows[0]) {
    await db.query(`NOTIFY ${DELIVERIES_CHANNEL}`); // the worker looks now rather than at its next poll
    return deliveryView(rows[0]);
  }
  const { rows: found } = await db.query<{ status: DeliveryStatus }>(
    'SELECT status FROM walgate.deliveries WHERE id = $1 AND webhook_id = $2',
    [deliveryId, webhookId],
  );
  if (!found[0]) return undefined;
  return found[0].status === 'pending' || found[0].status === 'retrying' ? 'unfinished' : 'payload-gone';
}

/**
 * Discards a dead letter that holds its row (onDead "hold"): it stays dead and listed, and its
 * row's later changes go on. Undefined when there is no such delivery; 'not-held' when it does not
 * hold its row.
 */
export async function discardDelivery(
  db: Queryable,
  webhookId: string,
  deliveryId: string,
): Promise<DeliveryView | 'not-held' | undefined> {
  const { rows } = await db.query<DeliveryRow>(
    `UPDATE walgate.deliveries d SET holds_row = false WHERE d.id = $1 AND d.webhook_id = $2 AND d.holds_row RETURNING ${DELIVERY_COLUMNS}`,
    [deliveryId, webhookId],
  );
  if (rows[0]) {
    await db.query(`NOTIFY ${DELIVERIES_CHANNEL}`); // its row's next change is claimable now
    return deliveryView(rows[0]);
  }
  const { rowCount } = await db.query('SELECT 1 FROM walgate.deliveries WHERE id = $1 AND webhook_id = $2', [deliveryId, webhookId]);
  return rowCount ? 'not-held' : undefined;
}

export interface DeliveryHealth {
  /** The newest delivery that succeeded: when. */
  lastSuccessAt: string | null;
  /** Failed attempts that started within the last hour. */
  failuresLastHour: number;
  /** Requests that waited for the throttle's turn within the last hour, and how long in all (ms). */
  throttledLastHour: number;
  throttledMsLastHour: number;
  /** Deliveries not finished yet (pending or retrying), counted up to BACKLOG_COUNTED. */
  backlog: number;
}

const HOUR_MS = 3_600_000;
/** The backlog is counted up to this (an index range of the subscription's due deliveries); more shows as this. */
export const BACKLOG_COUNTED = 100_000;

// Health reads the per-minute rollup (sql/015): at most an hour of rows per writing backend, the
// same cost at any traffic. The newest delivered minute comes from a partial index.
export async function deliveryHealth(db: Queryable, webhookId: string, now: Date): Promise<DeliveryHealth> {
  const { rows } = await db.query<{ last_success: Date | null; failures: number; throttled: number; throttled_ms: number; backlog: number }>(
    `WITH hour AS (
       SELECT coalesce(sum(failed), 0)::int AS failures, coalesce(sum(throttled), 0)::int AS throttled,
              coalesce(sum(throttled_ms), 0)::float8 AS throttled_ms
         FROM walgate.delivery_minutes WHERE webhook_id = $1 AND minute >= $2
     )
     SELECT (SELECT max(m.last_delivered_at) FROM walgate.delivery_minutes m
              WHERE m.webhook_id = $1 AND m.delivered > 0
                AND m.minute = (SELECT max(minute) FROM walgate.delivery_minutes WHERE webhook_id = $1 AND delivered > 0)) AS last_success,
            hour.failures, hour.throttled, hour.throttled_ms,
            (SELECT count(*)::int FROM (SELECT 1 FROM walgate.deliveries WHERE webhook_id = $1 AND status IN ('pending', 'retrying')
              LIMIT ${BACKLOG_COUNTED}) b) AS backlog
       FROM hour`,
    // The minute of `now - 1 h` counts whole: the figure is per minute, like the chart's.
    [webhookId, new Date(Math.floor((now.getTime() - HOUR_MS) / 60_000) * 60_000)],
  );
  const r = rows[0]!;
  return {
    lastSuccessAt: r.last_success ? r.last_success.toISOString() : null,
    failuresLastHour: r.failures,
    throttledLastHour: r.throttled,
    throttledMsLastHour: Math.round(r.throttled_ms),
    backlog: r.backlog,
  };
}

export interface MinuteBucket {
  /** The minute's start. */
  minute: string;
  delivered: number;
  failed: number;
  /** Requests that waited for the throttle's turn. */
  throttled: number;
}

/** Deliveries that succeeded, attempts that failed and requests the throttle held, per minute over the last hour (60 buckets, oldest first). */
export async function deliveryMinutes(db: Queryable, webhookId: string, now: Date): Promise<MinuteBucket[]> {
  const end = Math.floor(now.getTime() / 60_000) * 60_000 + 60_000;
  const start = end - HOUR_MS;
  const { rows } = await db.query<{ minute: Date; delivered: number; failed: number; throttled: number }>(
    `SELECT minute, sum(delivered)::int AS delivered, sum(failed)::int AS failed, sum(throttled)::int AS throttled
       FROM walgate.delivery_minutes
      WHERE webhook_id = $1 AND minute >= $2 AND minute < $3 GROUP BY minute`,
    [webhookId, new Date(start), new Date(end)],
  );
  const byMinute = new Map(rows.map((r) => [r.minute.getTime(), r]));
  const buckets: MinuteBucket[] = [];
  for (let t = start; t < end; t += 60_000) {
    const r = byMinute.get(t);
    buckets.push({
      minute: new Date(t).toISOString(),
      delivered: r?.delivered ?? 0,
      failed: r?.failed ?? 0,
      throttled: r?.throttled ?? 0,
    });
  }
  return buckets;
}

// Replays of dead letters live in replay-dead.ts; re-exported for the readers that import them here.
export { countDeadDeliveries, replayDeadDeliveries, type ReplayFilter } from './replay-dead.js';

/**
 * Removes up to `limit` of a subscription's finished (delivered or dead) deliveries, with their
 * attempts: a subscription being deleted sheds its history in short statements first, so the
 * delete's own transaction cascades over its unfinished deliveries only. Returns how many went.
 */
export async function shedFinishedHistory(db: Queryable, webhookId: string, limit: number): Promise<number> {
  const { rowCount } = await db.query(
    `DELETE FROM walgate.deliveries WHERE id = ANY (ARRAY(
       SELECT id FROM walgate.deliveries WHERE webhook_id = $1 AND status IN ('delivered', 'dead') LIMIT $2 FOR UPDATE SKIP LOCKED))`,
    [webhookId, limit],
  );
  return rowCount ?? 0;
}
