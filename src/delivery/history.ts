import type { Queryable } from '../core/db/pool.js';
import { DELIVERIES_CHANNEL } from './store.js';

// What the management API shows of deliveries, and what an operator may do with dead letters.
// The delivery worker owns every other write to walgate.deliveries.

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
}

/** The newest deliveries of a subscription, newest first. */
export async function recentDeliveries(db: Queryable, webhookId: string, limit = 50): Promise<DeliveryView[]> {
  const { rows } = await db.query(
    `SELECT id, event_id, event_type, status, http_status, attempts, last_error, next_attempt_at, delivered_at, created_at
       FROM walgate.deliveries WHERE webhook_id = $1 ORDER BY created_at DESC, id DESC LIMIT $2`,
    [webhookId, limit],
  );
  return rows.map((r) => ({
    id: r.id,
    eventId: r.event_id,
    event: r.event_type,
    status: r.status,
    httpStatus: r.http_status,
    attempts: r.attempts,
    lastError: r.last_error,
    // Only an unfinished delivery has a next attempt.
    nextAttemptAt: r.status === 'pending' || r.status === 'retrying' ? (r.next_attempt_at as Date).toISOString() : null,
    deliveredAt: r.delivered_at ? (r.delivered_at as Date).toISOString() : null,
    createdAt: (r.created_at as Date).toISOString(),
  }));
}

export interface ReplayFilter {
  webhookId?: string;
  since?: Date;
  until?: Date;
}

function replayWhere(f: ReplayFilter): { sql: string; values: unknown[] } {
  return {
    sql: `status = 'dead' AND ($1::text IS NULL OR webhook_id = $1)
          AND ($2::timestamptz IS NULL OR created_at >= $2) AND ($3::timestamptz IS NULL OR created_at < $3)`,
    values: [f.webhookId ?? null, f.since ?? null, f.until ?? null],
  };
}

export async function countDeadDeliveries(db: Queryable, filter: ReplayFilter): Promise<number> {
  const w = replayWhere(filter);
  const { rows } = await db.query(`SELECT count(*)::int AS n FROM walgate.deliveries WHERE ${w.sql}`, w.values);
  return rows[0].n;
}

/**
 * Moves dead letters back to pending, due now, with a fresh set of attempts; in batches, so a
 * replay of millions neither holds one huge transaction nor locks out the workers for long.
 * Returns how many were moved. `onBatch` reports progress.
 */
export async function replayDeadDeliveries(
  db: Queryable,
  filter: ReplayFilter,
  now: Date,
  onBatch?: (movedSoFar: number) => void,
  batchSize = 1000,
): Promise<number> {
  const w = replayWhere(filter);
  let moved = 0;
  for (;;) {
    const { rowCount } = await db.query(
      `UPDATE walgate.deliveries SET status = 'pending', attempts = 0, next_attempt_at = $4, last_error = NULL
        WHERE id IN (SELECT id FROM walgate.deliveries WHERE ${w.sql} ORDER BY created_at LIMIT $5 FOR UPDATE SKIP LOCKED)`,
      [...w.values, now, batchSize],
    );
    moved += rowCount ?? 0;
    onBatch?.(moved);
    if ((rowCount ?? 0) < batchSize) break;
  }
  // Wake the workers: the replayed deliveries are due now, not at their next poll.
  if (moved > 0) await db.query(`NOTIFY ${DELIVERIES_CHANNEL}`);
  return moved;
}
