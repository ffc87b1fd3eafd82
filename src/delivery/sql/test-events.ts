import { randomBytes } from 'node:crypto';
import type { Queryable } from '../../core/db/pool.js';
import { deliveryId } from '../../tailer/events.js';
import { TEST_EVENT_PREFIX } from '../custom-headers.js';
import { DELIVERY_COLUMNS, deliveryView, type DeliveryRow, type DeliveryView } from './history.js';
import { DELIVERIES_CHANNEL } from './queue.js';
import type { SampleColumn } from './sample-row.js';

// A test event: a sample INSERT of the subscription's table (its record from sample-row.ts), that
// goes through the retry queue like any parked delivery — signed, retried, in the delivery log —
// and is marked as a test in its payload ("test": true) and by a header (custom-headers.ts).

export interface TestTarget {
  webhookId: string;
  schemaName: string;
  table: string;
  select: readonly string[] | null;
}

/** Queues one test delivery, due now; the worker is woken. */
export async function queueTestEvent(
  db: Queryable,
  target: TestTarget,
  columns: readonly SampleColumn[],
  now: Date,
): Promise<DeliveryView> {
  const eventId = `${TEST_EVENT_PREFIX}${randomBytes(12).toString('hex')}`;
  const { rows } = await db.query<DeliveryRow>(
    `WITH ev AS (
       INSERT INTO walgate.events (id, schema_name, table_name, operation, committed_at, columns, record, old_record, changed_fields)
       VALUES ($1, $2, $3, 'INSERT', $4, $5::text[], $6::text[], NULL, '{}')
     )
     INSERT INTO walgate.deliveries AS d (id, webhook_id, event_id, event_type, select_fields, status, attempts, next_attempt_at, created_at)
     VALUES ($7, $8, $1, 'INSERT', $9::text[], 'pending', 0, $4, $4)
     RETURNING ${DELIVERY_COLUMNS}`,
    [
      eventId,
      target.schemaName,
      target.table,
      now,
      columns.map((c) => c.name),
      columns.map((c) => c.json),
      deliveryId(target.webhookId, eventId),
      target.webhookId,
      target.select,
    ],
  );
  await db.query(`NOTIFY ${DELIVERIES_CHANNEL}`);
  return deliveryView(rows[0]!);
}
