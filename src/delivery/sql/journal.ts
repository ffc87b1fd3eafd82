import type { Queryable } from '../../core/db/pool.js';
import type { DeliveredEntry, ParkedEntry } from '../journal.js';
import { payloadBytes } from '../payload-bytes.js';
import { DELIVERIES_CHANNEL } from './queue.js';

// The stream's writes (journal.ts batches them): delivered history rows and parked deliveries.

/** Tells the retry queue's workers to look now, or when `due` (ms since the epoch) comes. */
export async function notifyDue(db: Queryable, due: number): Promise<void> {
  await db.query(`SELECT pg_notify($1, $2)`, [DELIVERIES_CHANNEL, String(due)]);
}

// Each delivered change leaves one of two things, both in one statement per batch (all or
// nothing, through the fenced connection, so a change is settled exactly when what it leaves is
// committed): its history row, or — for a subscription whose history is 'failures' — its count in
// the per-minute rollup (sql/015), which the history rows feed through their insert trigger.
export async function writeDelivered(db: Queryable, rows: DeliveredEntry[]): Promise<void> {
  const full: DeliveredEntry[] = [];
  const counted: DeliveredEntry[] = [];
  for (const r of rows) (r.history === 'failures' ? counted : full).push(r);
  if (counted.length === 0) {
    await db.query({ name: 'walgate.write-delivered', text: INSERT_HISTORY, values: historyValues(full) });
  } else if (full.length === 0) {
    await db.query({ name: 'walgate.count-delivered', text: COUNT_DELIVERED('$1', '$2', '$3'), values: countValues(counted) });
  } else {
    // Both kinds in one batch (subscriptions of either mode on one stream): the count as a
    // data-modifying CTE, which runs to completion though nothing reads it.
    await db.query({
      name: 'walgate.write-and-count-delivered',
      text: `WITH counted AS (${COUNT_DELIVERED('$5', '$6', '$7')}) ${INSERT_HISTORY}`,
      values: [...historyValues(full), ...countValues(counted)],
    });
  }
}

// The rollup row of (subscription, minute, this backend), as the history rows' trigger writes it
// (sql/015). The client sends one tuple per subscription and minute, already summed: a batch of
// 500 deliveries to one subscription is one tuple, and the statement's cost does not grow with the
// deliveries. GROUP BY again in SQL: the minute is Postgres's date_trunc, and ON CONFLICT may not
// meet one key twice in a statement.
const COUNT_DELIVERED = (ids: string, counts: string, lastAt: string) =>
  `INSERT INTO walgate.delivery_minutes AS m (webhook_id, minute, backend, delivered, last_delivered_at)
   SELECT c.webhook_id, date_trunc('minute', to_timestamp(c.last_at / 1000.0)), pg_backend_pid(), sum(c.n)::int,
          max(to_timestamp(c.last_at / 1000.0))
     FROM unnest(${ids}::text[], ${counts}::int[], ${lastAt}::float8[]) AS c(webhook_id, n, last_at)
     JOIN walgate.webhooks w ON w.id = c.webhook_id
    GROUP BY 1, 2
   ON CONFLICT (webhook_id, minute, backend) DO UPDATE
      SET delivered = m.delivered + excluded.delivered,
          last_delivered_at = greatest(m.last_delivered_at, excluded.last_delivered_at)`;

/** One tuple per subscription and minute (UTC): its deliveries and the latest delivery time (ms since the epoch). */
function countValues(rows: DeliveredEntry[]): [string[], number[], number[]] {
  const tuples = new Map<string, { webhookId: string; n: number; lastAt: number }>();
  for (const r of rows) {
    const at = r.deliveredAt.getTime();
    const key = `${r.delivery.webhookId}\0${Math.floor(at / 60_000)}`;
    const t = tuples.get(key);
    if (t) {
      t.n++;
      if (at > t.lastAt) t.lastAt = at;
    } else tuples.set(key, { webhookId: r.delivery.webhookId, n: 1, lastAt: at });
  }
  const list = [...tuples.values()];
  return [list.map((t) => t.webhookId), list.map((t) => t.n), list.map((t) => t.lastAt)];
}

// The batch travels as one JSON document: JSON.stringify is native and Postgres reads it in one
// pass, where eleven parallel arrays cost the client a per-element escape and date formatting.
// Times travel as milliseconds since the epoch (no ISO formatting on the client, no date parsing
// in Postgres). The kept bodies (WEBHOOK_KEEP_PAYLOADS, about 2 KB of the row's 2.5) travel apart,
// as one binary parameter of their UTF-8 bytes with each body's offset and length: node-postgres
// sends a Buffer as it is, so the bodies are neither escaped nor scanned on the client, and
// Postgres cuts each one out by position instead of lexing it as JSON. (Lexed inside the document
// they were most of the statement's cost; joined by a separator into one text parameter they were
// most of the client's: a scan for the separator, the join, and UTF-8 encoding of the whole.)
// Any body round-trips byte for byte; one that is not valid UTF-8 text fails its batch.
const INSERT_HISTORY = `INSERT INTO walgate.deliveries (id, webhook_id, event_id, event_type, select_fields, status, attempts, http_status,
                                     next_attempt_at, created_at, delivered_at, first_attempt_started_at, first_attempt_duration_ms,
                                     first_attempt_response_body, payload, request_headers, response_headers, batch_id, previous_event_id)
     SELECT d.id, d.webhook_id, d.event_id, d.event_type, d.select_fields, 'delivered', 1, d.http_status,
            to_timestamp(d.created_at / 1000.0), to_timestamp(d.created_at / 1000.0), to_timestamp(d.delivered_at / 1000.0),
            to_timestamp(d.started_at / 1000.0), d.duration_ms, d.response_body,
            convert_from(substring($2::bytea FROM d.body_offset + 1 FOR d.body_length), 'UTF8'), d.request_headers, d.response_headers,
            d.batch_id,
            d.previous_event_id
       FROM ROWS FROM (
              json_to_recordset($1::json)
                AS (id text, webhook_id text, event_id text, event_type text, select_fields text[], http_status int, created_at float8,
                    delivered_at float8, started_at float8, duration_ms int, response_body text, request_headers json, response_headers json,
                    batch_id text, previous_event_id text),
              unnest($3::int[]),
              unnest($4::int[])
            ) AS d(id, webhook_id, event_id, event_type, select_fields, http_status, created_at, delivered_at, started_at, duration_ms,
                   response_body, request_headers, response_headers, batch_id, previous_event_id, body_offset, body_length)
       JOIN walgate.webhooks w ON w.id = d.webhook_id
     ON CONFLICT (id) DO NOTHING`;

function historyValues(rows: DeliveredEntry[]): [string, Buffer, number[], Array<number | null>] {
  // One buffer, each body encoded straight into its place: no per-body copy to concatenate.
  const offsets: number[] = [];
  const lengths: Array<number | null> = [];
  let size = 0;
  for (const r of rows) {
    const length = r.kept ? Buffer.byteLength(r.kept.payload) : null;
    offsets.push(size);
    lengths.push(length);
    size += length ?? 0;
  }
  const bodies = Buffer.allocUnsafe(size);
  for (let i = 0; i < rows.length; i++) if (rows[i]!.kept) bodies.write(rows[i]!.kept!.payload, offsets[i]!);
  const batch = rows.map((r) =>
    JSON.stringify({
      id: r.delivery.id,
      webhook_id: r.delivery.webhookId,
      event_id: r.delivery.eventId,
      event_type: r.delivery.eventType,
      select_fields: r.delivery.select,
      http_status: r.httpStatus,
      created_at: r.createdAt.getTime(),
      delivered_at: r.deliveredAt.getTime(),
      started_at: r.startedAt.getTime(),
      duration_ms: r.durationMs,
      response_body: r.responseBody,
      request_headers: r.kept?.requestHeaders,
      response_headers: r.kept?.responseHeaders,
      batch_id: r.batchId ?? null,
      previous_event_id: r.delivery.previousEventId ?? null,
    }),
  );
  return [`[${batch.join(',')}]`, bodies, offsets, lengths];
}

/**
 * One statement, so all or nothing: the events (once each), the deliveries, and the attempts of
 * the deliveries this statement inserted. A change read again after a crash finds its rows there
 * already and changes nothing (ids come from the WAL position).
 */
export async function writeParked(db: Queryable, rows: ParkedEntry[]): Promise<void> {
  const events = [...new Map(rows.map((r) => [r.event.id, r.event])).values()];
  await db.query(
    `WITH ev AS (
       INSERT INTO walgate.events (id, schema_name, table_name, operation, committed_at, columns, record, old_record, changed_fields)
       SELECT e.id, e.schema_name, e.table_name, e.operation, e.committed_at,
              e.columns::text[], e.record::text[], e.old_record::text[], e.changed_fields::text[]
         FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::timestamptz[], $6::text[], $7::text[], $8::text[], $9::text[])
              AS e(id, schema_name, table_name, operation, committed_at, columns, record, old_record, changed_fields)
       ON CONFLICT (id) DO NOTHING
     ), d AS (
       SELECT * FROM unnest($10::text[], $11::text[], $12::text[], $13::text[], $14::text[], $15::text[], $16::int[], $17::int[], $18::text[],
                            $19::timestamptz[], $20::timestamptz[], $21::timestamptz[], $22::int[], $23::text[], $24::text[], $25::text[],
                            $26::text[], $27::text[], $28::text[], $29::int[], $30::text[], $31::text[], $32::text[])
              AS d(id, webhook_id, event_id, event_type, select_fields, status, attempts, http_status, last_error,
                   next_attempt_at, created_at, started_at, duration_ms, response_body, order_key, order_key_old, payload, request_headers,
                   response_headers, payload_bytes, kind, batch_id, previous_event_id)
     ), inserted AS (
       INSERT INTO walgate.deliveries (id, webhook_id, event_id, event_type, select_fields, status, attempts, http_status, last_error, next_attempt_at, created_at,
                                       order_key, order_key_old, payload, request_headers, response_headers, payload_bytes, retry_slot, holds_row,
                                       batch_id, previous_event_id)
       SELECT d.id, d.webhook_id, d.event_id, d.event_type, d.select_fields::text[], d.status, d.attempts, d.http_status, d.last_error, d.next_attempt_at, d.created_at,
              d.order_key, d.order_key_old, d.payload, d.request_headers::json, d.response_headers::json, d.payload_bytes,
              -- Retrying: its first attempt failed and set a retry slot; so did a wait on the breaker.
              -- Pending: due now, or leased to the stream's request still in flight (sql/044: never
              -- brought forward).
              d.status = 'retrying' OR d.kind IS NOT DISTINCT FROM 'wait',
              d.status = 'dead' AND d.order_key IS NOT NULL AND w.on_dead = 'hold',
              d.batch_id,
              d.previous_event_id
         FROM d JOIN walgate.webhooks w ON w.id = d.webhook_id
       ON CONFLICT (id) DO NOTHING
       RETURNING id
     )
     INSERT INTO walgate.delivery_attempts (delivery_id, attempt, started_at, duration_ms, http_status, error, response_body, kind)
     SELECT d.id, CASE WHEN d.kind = 'wait' THEN d.attempts + 1 ELSE d.attempts END, d.started_at, d.duration_ms, d.http_status,
            d.last_error, d.response_body, d.kind
       FROM d JOIN inserted USING (id) WHERE d.started_at IS NOT NULL`,
    [
      events.map((e) => e.id),
      events.map((e) => e.schema),
      events.map((e) => e.table),
      events.map((e) => e.operation),
      events.map((e) => e.committedAt),
      // Arrays of arrays of varying length: each travels as its text[] literal.
      events.map((e) => textArray(e.columns)),
      events.map((e) => textArray(e.record)),
      events.map((e) => (e.old ? textArray(e.old) : null)),
      events.map((e) => textArray(e.changedFields)),
      rows.map((r) => r.delivery.id),
      rows.map((r) => r.delivery.webhookId),
      rows.map((r) => r.delivery.eventId),
      rows.map((r) => r.delivery.eventType),
      rows.map((r) => (r.delivery.select ? textArray(r.delivery.select) : null)),
      rows.map((r) => r.status),
      rows.map((r) => r.attempts),
      rows.map((r) => r.httpStatus),
      rows.map((r) => r.lastError),
      rows.map((r) => r.nextAttemptAt),
      rows.map((r) => r.createdAt),
      rows.map((r) => r.attempt?.startedAt ?? null),
      rows.map((r) => r.attempt?.durationMs ?? null),
      rows.map((r) => r.attempt?.responseBody ?? null),
      // A row-ordered delivery's keys (tailer/order-keys.ts): the retry queue claims it only
      // after every earlier unfinished delivery of its subscription sharing one (store.ts).
      rows.map((r) => r.delivery.orderKeys?.[0] ?? null),
      rows.map((r) => r.delivery.orderKeys?.[1] ?? null),
      // What its first attempt sent (WEBHOOK_KEEP_PAYLOADS), on the row it writes anyway.
      rows.map((r) => r.attempt?.kept?.payload ?? null),
      rows.map((r) => (r.attempt?.kept ? JSON.stringify(r.attempt.kept.requestHeaders) : null)),
      rows.map((r) => (r.attempt?.kept?.responseHeaders ? JSON.stringify(r.attempt.kept.responseHeaders) : null)),
      // Its weight once the retry queue claims it (the claim's byte budget, queue.ts).
      rows.map((r) => payloadBytes(r.event)),
      rows.map((r) => (r.attempt ? (r.attempt.kind ?? 'request') : null)),
      // The batch it was sent in (batch.ts): the retry queue sends the batch again whole.
      rows.map((r) => r.batchId ?? null),
      rows.map((r) => r.delivery.previousEventId ?? null),
    ],
  );
}

/** A Postgres text[] literal: every element quoted, so any text (fragments, odd names) is safe. */
export function textArray(values: readonly string[]): string {
  return `{${values.map((v) => `"${v.replaceAll('\\', '\\\\').replaceAll('"', '\\"')}"`).join(',')}}`;
}
