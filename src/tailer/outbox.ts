import { PgCode, pgCode, withTransaction, type Pool } from '../core/db/pool.js';
import type { DeliveryRecord, EventRecord } from './events.js';
import { formatLsn, type Lsn } from './lsn.js';
import { saveViewChanges, type ViewChange } from './subscriptions.js';

export const DELIVERIES_CHANNEL = 'walgate_deliveries';

export interface Batch {
  events: EventRecord[];
  deliveries: DeliveryRecord[];
  viewChanges: ViewChange[];
  /** End LSN of the last whole transaction in the batch; null when the batch is part of one transaction. */
  processedLsn: Lsn | null;
}

/**
 * Writes a batch in one transaction: the events, their deliveries, the subscription view, and the
 * position they bring the tailer to. Only after this commits may the slot be acknowledged up to processedLsn.
 * Re-reading after a crash writes the same events and (webhook, event) pairs again: their ids come
 * from the WAL position, so ON CONFLICT keeps the first. A subscription deleted since the change (its row is gone) gets nothing.
 */
export async function writeBatch(pool: Pool, slotName: string, batch: Batch, now: Date): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await withTransaction(pool, async (client) => {
        if (batch.events.length > 0) {
          const e = batch.events;
          await client.query(
            `INSERT INTO walgate.events (id, schema_name, table_name, operation, committed_at, columns, record, old_record, changed_fields)
             SELECT e.id, e.schema_name, e.table_name, e.operation, e.committed_at,
                    e.columns::text[], e.record::text[], e.old_record::text[], e.changed_fields::text[]
               FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::timestamptz[], $6::text[], $7::text[], $8::text[], $9::text[])
                    AS e(id, schema_name, table_name, operation, committed_at, columns, record, old_record, changed_fields)
             ON CONFLICT (id) DO NOTHING`,
            [
              e.map((r) => r.id),
              e.map((r) => r.schema),
              e.map((r) => r.table),
              e.map((r) => r.operation),
              e.map((r) => r.committedAt),
              // Arrays of arrays of varying length: each travels as its text[] literal.
              e.map((r) => textArray(r.columns)),
              e.map((r) => textArray(r.record)),
              e.map((r) => (r.old ? textArray(r.old) : null)),
              e.map((r) => textArray(r.changedFields)),
            ],
          );
        }
        if (batch.deliveries.length > 0) {
          const d = batch.deliveries;
          await client.query(
            `INSERT INTO walgate.deliveries (id, webhook_id, event_id, event_type, select_fields, status, attempts, next_attempt_at, created_at)
             SELECT d.id, d.webhook_id, d.event_id, d.event_type, d.select_fields::text[], 'pending', 0, $6, $6
               FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[])
                    AS d(id, webhook_id, event_id, event_type, select_fields)
               JOIN walgate.webhooks w ON w.id = d.webhook_id
             ON CONFLICT (id) DO NOTHING`,
            [d.map((r) => r.id), d.map((r) => r.webhookId), d.map((r) => r.eventId), d.map((r) => r.eventType), d.map((r) => (r.select ? textArray(r.select) : null)), now],
          );
          await client.query(`NOTIFY ${DELIVERIES_CHANNEL}`);
        }
        await saveViewChanges(client, batch.viewChanges);
        if (batch.processedLsn !== null) {
          await client.query(
            `INSERT INTO walgate.tailer_state (slot_name, processed_lsn, updated_at) VALUES ($1, $2, $3)
             ON CONFLICT (slot_name) DO UPDATE SET processed_lsn = greatest(tailer_state.processed_lsn, EXCLUDED.processed_lsn),
                                                   updated_at = EXCLUDED.updated_at`,
            [slotName, formatLsn(batch.processedLsn), now],
          );
        }
      });
      return;
    } catch (err) {
      // A subscription deleted between our join and the foreign-key check: the join will leave it
      // out next time.
      if (pgCode(err) === PgCode.foreignKeyViolation && attempt < 5) continue;
      throw err;
    }
  }
}

/** A Postgres text[] literal: every element quoted, so any text (fragments, odd names) is safe. */
export function textArray(values: readonly string[]): string {
  return `{${values.map((v) => `"${v.replaceAll('\\', '\\\\').replaceAll('"', '\\"')}"`).join(',')}}`;
}

export async function readProcessedLsn(pool: Pool, slotName: string): Promise<string | undefined> {
  const { rows } = await pool.query<{ processed_lsn: string }>(
    'SELECT processed_lsn::text FROM walgate.tailer_state WHERE slot_name = $1',
    [slotName],
  );
  return rows[0]?.processed_lsn;
}
