import { PgCode, pgCode, withTransaction, type Pool } from '../db/pool.js';
import type { DeliveryRow } from './events.js';
import { formatLsn, type Lsn } from './lsn.js';
import { saveViewChanges, type ViewChange } from './subscriptions.js';

export const DELIVERIES_CHANNEL = 'walgate_deliveries';

export interface Batch {
  deliveries: DeliveryRow[];
  viewChanges: ViewChange[];
  /** End LSN of the last whole transaction in the batch; null when the batch is part of one transaction. */
  processedLsn: Lsn | null;
}

/**
 * Writes a batch in one transaction: the deliveries, the subscription view, and the position they
 * bring the tailer to. Only after this commits may the slot be acknowledged up to processedLsn.
 * Re-reading after a crash writes the same (webhook, event) pairs again: their ids are made of
 * the pair, so ON CONFLICT keeps the first. A subscription deleted since the change (its row is gone) gets nothing.
 */
export async function writeBatch(pool: Pool, slotName: string, batch: Batch, now: Date): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await withTransaction(pool, async (client) => {
        if (batch.deliveries.length > 0) {
          const d = batch.deliveries;
          await client.query(
            `INSERT INTO walgate.deliveries
               (id, webhook_id, event_id, event_type, payload, status, attempts, next_attempt_at, created_at, event_committed_at)
             SELECT d.id, d.webhook_id, d.event_id, d.event_type, d.payload, 'pending', 0, $7, $7, d.committed_at
               FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::timestamptz[])
                    AS d(id, webhook_id, event_id, event_type, payload, committed_at)
               JOIN walgate.webhooks w ON w.id = d.webhook_id
             ON CONFLICT (id) DO NOTHING`,
            [
              d.map((r) => r.id),
              d.map((r) => r.webhookId),
              d.map((r) => r.eventId),
              d.map((r) => r.eventType),
              d.map((r) => r.payload),
              d.map((r) => r.committedAt),
              now,
            ],
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

export async function readProcessedLsn(pool: Pool, slotName: string): Promise<string | undefined> {
  const { rows } = await pool.query<{ processed_lsn: string }>(
    'SELECT processed_lsn::text FROM walgate.tailer_state WHERE slot_name = $1',
    [slotName],
  );
  return rows[0]?.processed_lsn;
}
