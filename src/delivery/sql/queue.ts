import { randomBytes } from 'node:crypto';
import type { Pool } from '../../core/db/pool.js';
import { PAYLOAD_COLUMNS, type PayloadRow } from '../payload.js';
import type { KeptRequest } from '../attempt.js';
import { RETRY_DELAYS_MS } from './retry-delays.js';
import { RATE_LIMIT } from './rate-limit.js';
import type { RateLimitSettings } from '../throttle.js';

// The retry queue's statements on walgate.deliveries and walgate.delivery_attempts (the stream
// parks into it through journal.ts).

/** NOTIFY channel: something is due in the retry queue (a hint; workers poll as well). */
export const DELIVERIES_CHANNEL = 'walgate_deliveries';

/** Subscribes a dedicated connection to due-delivery hints. */
export async function listenForDue(client: { query(text: string): Promise<unknown> }): Promise<void> {
  await client.query(`LISTEN ${DELIVERIES_CHANNEL}`);
}

export interface ClaimedDelivery extends PayloadRow {
  id: string;
  webhook_id: string;
  attempts: number;
  /** The claim's lease end (its token when the result is recorded). */
  lease: Date;
  /** Row-ordered: the next change of its row is claimable once this one's result is recorded. */
  ordered: boolean;
  url: string;
  secret: Buffer;
  /** The secret before the last rotation, while its grace lasts (it signs too). */
  previous_secret: Buffer | null;
  /** The subscription's custom header values, sealed (custom-headers.ts). */
  header_values: Buffer | null;
  event_type: string;
  /** The body as first sent, when kept: what is sent again once its event is gone (delivered at its first attempt, or pruned). */
  kept_payload: string | null;
  /** The delivery's event id (event_id, from the events row, is null once that row is gone). */
  delivery_event_id: string;
  /** What it weighs held in memory (its event's payload bytes, plus a kept body): the claim's byte budget. */
  held_bytes: number;
  /** When its schedule began (capture, or an operator's retry or replay): the breaker-wait bound counts from it. */
  schedule_started_at: Date;
  /** Its subscription's retry schedule, or its environment's; null: the platform's (retry-delays.ts). */
  retry_delays_ms: number[] | null;
  /** Its subscription's throttle (delivery/throttle.ts); null: none. */
  rate_limit: RateLimitSettings | null;
  /** Its event row is gone and no body was kept: it cannot be sent (endUnsendable). */
  payload_gone: boolean;
  /** The batch it was sent in (its members are claimed together), or null: sent alone or not yet (batch-claims.ts). */
  batch_id: string | null;
  /** The subscription's batch settings now: unbatched deliveries of a batched subscription are sent in new batches. */
  batch_max_events: number;
  batch_max_bytes: number;
  /** Row ordering's keys (tailer/order-keys.ts): a batched subscription's row head takes its row's next changes along (sql/chains.ts). */
  order_key: string | null;
  order_key_old: string | null;
}

/** What a delivery that cannot be sent any more says in its log. */
export const PAYLOAD_GONE = 'its payload is no longer stored: it cannot be sent';

/**
 * Ends claimed deliveries that have nothing to send (their event row pruned, no body kept): dead,
 * saying why — visible in the log, and no longer holding back their row. Only while each is
 * still this worker's claim (the lease is the token).
 */
export async function endUnsendable(pool: Pool, claims: Array<{ id: string; lease: Date }>): Promise<void> {
  if (claims.length === 0) return;
  await pool.query(
    `UPDATE walgate.deliveries d SET status = 'dead', last_error = $3, retry_slot = false
       FROM unnest($1::text[], $2::timestamptz[]) AS c(id, lease)
      WHERE d.id = c.id AND d.next_attempt_at = c.lease AND d.status IN ('pending', 'retrying')`,
    [claims.map((c) => c.id), claims.map((c) => c.lease), PAYLOAD_GONE],
  );
}

export interface ClaimOptions {
  now: Date;
  /** A claim lasts until then: a worker that dies leaves its deliveries due again at that time. */
  leaseUntil: Date;
  limit: number;
  /** At most this many deliveries of one subscription in flight (in this worker). */
  perWebhook: number;
  /** What this worker already has in flight, per subscription. */
  inflight: Map<string, number>;
  /** The payload bytes it may still hold: claimed deliveries weigh at most this much together (but at least one is claimed). */
  maxBytes?: number;
  /**
   * Where the walk over a row-ordered subscription's row keys begins (it wraps around). Random by
   * default: keys are hashes, so each claim starts somewhere else and no key waits for the walk to
   * reach it — without state shared between workers.
   */
  startKey?: string;
  /** At most this many row keys visited from the start on, and as many from the first key on (the wrap); default MAX_KEYS_PER_CLAIM. */
  maxKeys?: number;
  /** Whether throttled subscriptions may be claimed: only by the leading tailer's worker (throttle.ts). Default true. */
  throttled?: boolean;
}

/**
 * Row keys a claim visits at most from its start on, and again from the first key on once it has
 * wrapped around, per subscription: its cost stays
 * bounded when a subscription has many rows whose heads all wait for a retry (each visit is one
 * index descent); with more keys than that, the moving start reaches the rest on later claims.
 */
export const MAX_KEYS_PER_CLAIM = 1_000;

/**
 * Claims due deliveries of active subscriptions. Several workers (in several tailer processes)
 * claim at once: FOR UPDATE SKIP LOCKED lets each take rows the others are not taking instead of
 * queueing behind their locks, and moving next_attempt_at to the lease's end is the claim itself —
 * no row stays locked while the HTTP request runs. A subscription gets only what tops its in-flight
 * count up to `perWebhook`, so one subscription's backlog (or a hanging endpoint) cannot fill every
 * worker slot.
 */
export async function claimDue(pool: Pool, o: ClaimOptions): Promise<ClaimedDelivery[]> {
  const { rows } = await pool.query<ClaimedDelivery>(
    `WITH quota AS (
       -- What each active subscription may still take: its in-flight room in this worker.
       SELECT w.id AS webhook_id, $4 - coalesce(busy.n, 0) AS n
         FROM walgate.webhooks w
         LEFT JOIN unnest($5::text[], $6::int[]) AS busy(webhook_id, n) ON busy.webhook_id = w.id
        WHERE w.active AND $4 - coalesce(busy.n, 0) > 0
          -- A throttled subscription is sent by one process, whose bucket is its whole budget (throttle.ts).
          AND (w.rate_limit_per_second IS NULL OR $10)
     ), candidates AS (
       -- Each subscription's oldest claimable deliveries, up to its room (index ranges per
       -- subscription). Not the oldest due deliveries overall: a hanging endpoint's backlog is the
       -- oldest, and a window over all of them would hold nothing but its rows while the healthy
       -- subscriptions' deliveries waited behind it (head-of-line blocking).
       SELECT d.id, d.next_attempt_at, d.bytes, d.members, d.batch_id FROM quota q CROSS JOIN LATERAL (
         SELECT c.id, c.next_attempt_at, c.bytes, c.members, c.batch_id
           -- Which deliveries are examined: the subscription's oldest due unordered ones, and the
           -- due heads of its rows (the first unfinished delivery of each row key). Only a head can
           -- be claimable — any other delivery of its key waits for it — and after an outage the
           -- due range holds mostly blocked successors (parked when their row's head failed, so
           -- "due" since), so a walk of that range grew with the backlog. The conditions below
           -- decide, as before; this only narrows what they are asked about.
           -- A member of a batch stands for its batch's lead (its first unfinished member), which
           -- alone is claimed, bringing the others: found through any member, a batch larger than
           -- the room is reached whichever of its members the ranges below meet first.
           FROM unnest(ARRAY(SELECT DISTINCT coalesce(
                  (SELECT s.id FROM walgate.deliveries s WHERE s.batch_id = x.batch_id AND s.batch_id IS NOT NULL
                      AND s.status IN ('pending', 'retrying') ORDER BY s.id LIMIT 1), x.id)
                FROM walgate.deliveries x WHERE x.id = ANY (ARRAY(
                  (SELECT u.id FROM walgate.deliveries u
                    -- Unfinished spelled as in sql/035's index, which alone it then matches: not
                    -- deliveries_due, every subscription's due range, filtered down to this one's.
                    WHERE u.webhook_id = q.webhook_id AND u.status NOT IN ('delivered', 'dead') AND u.order_key IS NULL AND u.next_attempt_at <= $1
                    ORDER BY u.next_attempt_at LIMIT q.n)
                  UNION ALL
                  -- A skip scan over the subscription's unfinished row keys (sql/035): one index
                  -- descent per key reaches its head. It starts at a position that moves from claim to
                  -- claim ($8) and wraps around, visits at most $9 keys from there and $9 from the first — bounded
                  -- when every head is in backoff — and stops once it has found the room's worth.
                  (WITH RECURSIVE from_start AS (
                     (SELECT h.order_key, h.id, h.next_attempt_at, 1 AS visited FROM walgate.deliveries h
                       WHERE h.webhook_id = q.webhook_id AND h.status IN ('pending', 'retrying') AND h.order_key IS NOT NULL AND h.order_key COLLATE "C" >= $8
                       ORDER BY h.order_key COLLATE "C", h.event_id LIMIT 1)
                     UNION ALL
                     SELECT n.order_key, n.id, n.next_attempt_at, k.visited + 1 FROM from_start k CROSS JOIN LATERAL (
                       SELECT h.order_key, h.id, h.next_attempt_at FROM walgate.deliveries h
                        WHERE h.webhook_id = q.webhook_id AND h.status IN ('pending', 'retrying') AND h.order_key IS NOT NULL AND h.order_key COLLATE "C" > k.order_key
                        ORDER BY h.order_key COLLATE "C", h.event_id LIMIT 1) n
                      WHERE k.visited < $9
                   ), wrapped AS (
                     (SELECT h.order_key, h.id, h.next_attempt_at, 1 AS visited FROM walgate.deliveries h
                       WHERE h.webhook_id = q.webhook_id AND h.status IN ('pending', 'retrying') AND h.order_key IS NOT NULL AND h.order_key COLLATE "C" < $8
                       ORDER BY h.order_key COLLATE "C", h.event_id LIMIT 1)
                     UNION ALL
                     SELECT n.order_key, n.id, n.next_attempt_at, k.visited + 1 FROM wrapped k CROSS JOIN LATERAL (
                       SELECT h.order_key, h.id, h.next_attempt_at FROM walgate.deliveries h
                        WHERE h.webhook_id = q.webhook_id AND h.status IN ('pending', 'retrying') AND h.order_key IS NOT NULL
                          AND h.order_key COLLATE "C" > k.order_key AND h.order_key COLLATE "C" < $8
                        ORDER BY h.order_key COLLATE "C", h.event_id LIMIT 1) n
                      WHERE k.visited < $9
                   )
                   SELECT heads.id FROM (SELECT * FROM from_start UNION ALL SELECT * FROM wrapped) heads
                    WHERE heads.next_attempt_at <= $1 LIMIT q.n))))) AS candidate(id)
           -- Each candidate read by its id alone (the primary key: no plan that ranges over the due
           -- deliveries to intersect with it), checked and locked.
           CROSS JOIN LATERAL (
             SELECT c.id, c.next_attempt_at, c.batch_id,
                    -- A batch weighs (and counts) all its unfinished members: they are claimed with it, below.
                    coalesce(b.bytes, coalesce(c.payload_bytes, 1024) + coalesce(octet_length(c.payload), 0)) AS bytes,
                    coalesce(b.members, 1) AS members
               FROM walgate.deliveries c
               LEFT JOIN LATERAL (
                 SELECT sum(coalesce(s.payload_bytes, 1024) + coalesce(octet_length(s.payload), 0)) AS bytes, count(*) AS members
                   FROM walgate.deliveries s
                  WHERE s.batch_id = c.batch_id AND s.batch_id IS NOT NULL AND s.status IN ('pending', 'retrying')) b ON c.batch_id IS NOT NULL
              WHERE c.id = candidate.id AND c.status IN ('pending', 'retrying') AND c.next_attempt_at <= $1
               -- A batch (batch_id, sql/075) is claimed through its first unfinished member, the
               -- lead, and the others go with it: one worker holds the whole batch, which is sent
               -- again as it was (same id, same events), never split between two workers.
               AND (c.batch_id IS NULL OR NOT EXISTS (SELECT 1 FROM walgate.deliveries s WHERE s.batch_id = c.batch_id AND s.batch_id IS NOT NULL
                                                         AND s.status IN ('pending', 'retrying') AND s.id < c.id))
               -- Row ordering: not before an earlier (smaller event_id, that is commit order)
               -- unfinished delivery that shares one of its row keys (a key names its subscription
               -- and row, tailer/order-keys.ts). That one is pending or retrying until it is
               -- delivered or dead — while a worker holds it too — so a row's changes go one at a
               -- time, in order; delivered and dead ones block nobody. One probe of the order-key
               -- indexes (sql/009) per key and column, each a single equality on the key alone.
               AND (c.order_key IS NULL OR NOT (
                    EXISTS (SELECT 1 FROM walgate.deliveries p WHERE p.order_key = c.order_key AND p.event_id < c.event_id
                               AND p.order_key IS NOT NULL AND p.status IN ('pending', 'retrying'))
                 -- onDead "hold": a dead letter that holds its row blocks it as an unfinished one does (sql/041).
                 OR EXISTS (SELECT 1 FROM walgate.deliveries p WHERE p.order_key = c.order_key AND p.event_id < c.event_id AND p.holds_row)
                 OR EXISTS (SELECT 1 FROM walgate.deliveries p WHERE p.order_key_old = c.order_key AND p.event_id < c.event_id
                               AND p.holds_row AND p.order_key_old IS NOT NULL)
                 OR EXISTS (SELECT 1 FROM walgate.deliveries p WHERE p.order_key_old = c.order_key AND p.event_id < c.event_id
                               AND p.order_key_old IS NOT NULL AND p.status IN ('pending', 'retrying'))
                 OR (c.order_key_old IS NOT NULL AND (
                      EXISTS (SELECT 1 FROM walgate.deliveries p WHERE p.order_key = c.order_key_old AND p.event_id < c.event_id
                                 AND p.order_key IS NOT NULL AND p.status IN ('pending', 'retrying'))
                   OR EXISTS (SELECT 1 FROM walgate.deliveries p WHERE p.order_key_old = c.order_key_old AND p.event_id < c.event_id
                                 AND p.order_key_old IS NOT NULL AND p.status IN ('pending', 'retrying'))))))
             -- Locked as they are chosen, skipping what another worker is claiming right now: two
             -- tailers draining one subscription's backlog take the next rows, not the same ones
             -- (chosen first and locked after, the second found them taken and went idle until the
             -- next poll). Locked before the LIMIT below: at most twice the room, for this statement.
             FOR UPDATE OF c SKIP LOCKED
           ) c
          ORDER BY c.next_attempt_at LIMIT q.n
       ) d
       ORDER BY d.next_attempt_at LIMIT $3
     ), within AS (
       -- The byte budget: the oldest candidates whose weight fits in what the worker may still
       -- hold (always the first: one delivery larger than the budget still goes, alone).
       SELECT id, batch_id FROM (SELECT id, batch_id, sum(bytes) OVER w - bytes AS before, sum(members) OVER w - members AS before_n
                                   FROM candidates WINDOW w AS (ORDER BY next_attempt_at, id)) c
        WHERE c.before < $7 AND c.before_n < $3
     ), leased AS (
       -- = ANY(ARRAY(...)): an index lookup per id. A join is planned as a scan of every delivery
       -- kept, which made claims slower as the history grew.
       -- A lease, not a retry slot (sql/044): a breaker's closing must not bring it forward.
       -- A batch's lead brings its other unfinished members (the lead rule above: no other claim takes them).
       UPDATE walgate.deliveries d SET next_attempt_at = $2, retry_slot = false
        WHERE d.id = ANY (ARRAY(SELECT id FROM within
                                UNION SELECT s.id FROM walgate.deliveries s
                                 WHERE s.batch_id = ANY (ARRAY(SELECT batch_id FROM within WHERE batch_id IS NOT NULL))
                                   AND s.batch_id IS NOT NULL AND s.status IN ('pending', 'retrying')))
       RETURNING ${LEASED_RETURNING}
     )
     SELECT ${CLAIMED_COLUMNS('$1')}
       FROM leased d LEFT JOIN walgate.events e ON e.id = d.event_id JOIN walgate.webhooks w ON w.id = d.webhook_id
      ORDER BY d.event_id`, // dispatched in WAL order, as far as concurrency allows (no order is promised)
    [
      o.now,
      o.leaseUntil,
      o.limit,
      o.perWebhook,
      [...o.inflight.keys()],
      [...o.inflight.values()],
      o.maxBytes ?? Number.MAX_SAFE_INTEGER,
      o.startKey ?? randomBytes(3).toString('base64url'),
      o.maxKeys ?? MAX_KEYS_PER_CLAIM,
      o.throttled ?? true,
    ],
  );
  return rows;
}

/** What a claim's UPDATE … RETURNING hands on (as `d`) to CLAIMED_COLUMNS; sql/chains.ts claims with it too. */
export const LEASED_RETURNING = `d.id, d.webhook_id, d.batch_id, d.event_id, d.event_type, d.attempts, d.select_fields, d.previous_event_id, d.next_attempt_at AS lease,
                 d.order_key IS NOT NULL AS ordered, d.order_key, d.order_key_old, d.payload AS kept_payload,
                 coalesce(d.payload_bytes, 1024) + coalesce(octet_length(d.payload), 0) AS held_bytes,
                 coalesce(d.schedule_started_at, d.created_at) AS schedule_started_at`;

/** A ClaimedDelivery, from the leased rows `d` joined with their event `e` and subscription `w`; `now` the claim's time parameter. */
export const CLAIMED_COLUMNS = (now: string) =>
  `d.id, d.webhook_id, d.batch_id, w.batch_max_events, w.batch_max_bytes, d.attempts, d.lease, d.ordered, d.order_key, d.order_key_old,
   w.url, w.secret, w.header_values, d.event_type, d.kept_payload, d.held_bytes, d.schedule_started_at, ${RETRY_DELAYS_MS} AS retry_delays_ms,
   ${RATE_LIMIT} AS rate_limit,
   d.event_id AS delivery_event_id,
   CASE WHEN w.previous_secret_until > ${now} THEN w.previous_secret END AS previous_secret, ${PAYLOAD_COLUMNS}
   -- Neither its event nor a kept body: nothing to send. Returned all the same, so that the
   -- worker ends it (payloadGone); left out, it stayed leased and was leased again forever,
   -- holding back its row's later changes.
   , e.id IS NULL AND d.kept_payload IS NULL AS payload_gone`;

export interface AttemptResult {
  deliveryId: string;
  /** The claim's lease (its next_attempt_at): a result is recorded only while the claim is still ours. */
  lease: Date;
  /** A request sent, or a wait on the endpoint's breaker (no request, no attempt spent). */
  kind: 'request' | 'wait';
  /** The attempt's number in the log (1-based): for a wait, the attempt that waited. */
  attempt: number;
  /** The delivery's attempts spent after this one (a wait spends none). */
  spent: number;
  startedAt: Date;
  durationMs: number;
  httpStatus: number | null;
  error: string | null;
  /** The first KiB of the answer (sender.ts). */
  responseBody: string | null;
  status: 'pending' | 'delivered' | 'retrying' | 'dead';
  nextAttemptAt: Date | null;
  deliveredAt: Date | null;
  /** The request as sent, kept on the delivery's row (WEBHOOK_KEEP_PAYLOADS); null keeps what is there. */
  kept?: KeptRequest | null;
}

/**
 * Records a batch of attempts: the deliveries' new state and one attempt row each. A worker whose
 * lease ran out (and whose delivery another worker claimed meanwhile) records nothing: the claim's
 * lease time is its token.
 */
export async function recordAttempts(pool: Pool, results: AttemptResult[]): Promise<void> {
  if (results.length === 0) return;
  await pool.query(
    `WITH r AS (
       SELECT * FROM unnest($1::text[], $2::timestamptz[], $3::int[], $4::text[], $5::int[], $6::text[], $7::timestamptz[],
                            $8::timestamptz[], $9::timestamptz[], $10::int[], $11::text[], $12::text[], $13::text[], $14::text[],
                            $15::text[], $16::int[])
              AS r(id, lease, attempt, status, http_status, error, next_attempt_at, delivered_at, started_at, duration_ms, response_body,
                   payload, request_headers, response_headers, kind, spent)
     ), updated AS (
       UPDATE walgate.deliveries d SET status = r.status, attempts = r.spent,
              -- A wait has no answer: the last one's status stays.
              http_status = CASE WHEN r.kind = 'wait' THEN d.http_status ELSE r.http_status END,
              last_error = r.error, next_attempt_at = coalesce(r.next_attempt_at, d.next_attempt_at), delivered_at = r.delivered_at,
              -- A backoff or a wait on the breaker: a retry slot, which the breaker's closing brings forward.
              retry_slot = r.status IN ('pending', 'retrying'),
              -- A row-ordered dead letter of an onDead "hold" subscription holds its row (sql/041).
              holds_row = r.status = 'dead' AND d.order_key IS NOT NULL AND w.on_dead = 'hold',
              payload = coalesce(r.payload, d.payload), request_headers = coalesce(r.request_headers::json, d.request_headers),
              -- The latest answer's headers go with the latest request's (none without an answer).
              response_headers = CASE WHEN r.request_headers IS NULL THEN d.response_headers ELSE r.response_headers::json END
         FROM r, walgate.webhooks w WHERE d.id = r.id AND d.next_attempt_at = r.lease AND w.id = d.webhook_id
       RETURNING d.id
     )
     INSERT INTO walgate.delivery_attempts (delivery_id, attempt, started_at, duration_ms, http_status, error, response_body, kind)
     SELECT r.id, r.attempt, r.started_at, r.duration_ms, r.http_status, r.error, r.response_body, r.kind FROM r JOIN updated USING (id)`,
    [
      results.map((r) => r.deliveryId),
      results.map((r) => r.lease),
      results.map((r) => r.attempt),
      results.map((r) => r.status),
      results.map((r) => r.httpStatus),
      results.map((r) => r.error),
      results.map((r) => r.nextAttemptAt),
      results.map((r) => r.deliveredAt),
      results.map((r) => r.startedAt),
      results.map((r) => r.durationMs),
      results.map((r) => r.responseBody),
      results.map((r) => r.kept?.payload ?? null),
      results.map((r) => (r.kept ? JSON.stringify(r.kept.requestHeaders) : null)),
      results.map((r) => (r.kept?.responseHeaders ? JSON.stringify(r.kept.responseHeaders) : null)),
      results.map((r) => r.kind),
      results.map((r) => r.spent),
    ],
  );
}

/**
 * Puts claimed deliveries back without spending an attempt (their endpoint's breaker is open, or
 * the worker stops). Only while each is still this worker's claim: its lease is the token, so a
 * postponement never overwrites another worker's claim. What it leaves is a wait, no longer a lease
 * (sql/044): a breaker's closing may bring it forward.
 */
export async function postpone(pool: Pool, claims: Array<{ id: string; lease: Date }>, until: Date): Promise<void> {
  if (claims.length === 0) return;
  await pool.query(
    `UPDATE walgate.deliveries d SET next_attempt_at = $3, retry_slot = true
       FROM unnest($1::text[], $2::timestamptz[]) AS c(id, lease)
      WHERE d.id = c.id AND d.next_attempt_at = c.lease AND d.status IN ('pending', 'retrying')`,
    [claims.map((c) => c.id), claims.map((c) => c.lease), until],
  );
}

/** Extends a claim from now (the send); null when the claim is no longer ours. */
export async function renewLease(pool: Pool, id: string, lease: Date, until: Date): Promise<Date | null> {
  const { rowCount } = await pool.query(
    `UPDATE walgate.deliveries SET next_attempt_at = $3 WHERE id = $1 AND next_attempt_at = $2 AND status IN ('pending', 'retrying')`,
    [id, lease, until],
  );
  return rowCount ? until : null;
}

export async function queueDepth(pool: Pool): Promise<Record<string, number>> {
  const { rows } = await pool.query<{ status: string; n: number }>(
    `SELECT status, count(*)::int AS n FROM walgate.deliveries WHERE status IN ('pending', 'retrying') GROUP BY status
     UNION ALL SELECT 'dead', count(*)::int FROM walgate.deliveries WHERE status = 'dead'`,
  );
  const depth: Record<string, number> = { pending: 0, retrying: 0, dead: 0 };
  for (const r of rows) depth[r.status] = r.n;
  return depth;
}

/** Unfinished (pending or retrying) deliveries per subscription that has any. */
export async function backlogBySubscription(pool: Pool): Promise<Map<string, number>> {
  const { rows } = await pool.query<{ webhook_id: string; n: number }>(
    `SELECT webhook_id, count(*)::int AS n FROM walgate.deliveries WHERE status IN ('pending', 'retrying') GROUP BY webhook_id`,
  );
  return new Map(rows.map((r) => [r.webhook_id, r.n]));
}
