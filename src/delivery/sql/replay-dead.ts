import type { Queryable } from '../../core/db/pool.js';
import { DELIVERIES_CHANNEL } from './queue.js';

// Dead letters made pending again, in keyset pages (delivery/replays.ts runs them as jobs; the CLI too).

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
 * Moves dead letters back to pending, due now, with a fresh set of attempts, unordered; in batches, so a
 * replay of millions neither holds one huge transaction nor locks out the workers for long.
 * Returns how many were moved. `onBatch` reports progress.
 */
/** One page of a replay: how many it read, how many it moved, and the last one read (the cursor). */
interface ReplayPage {
  read: number;
  moved: number;
  created_at: string | null;
  id: string | null;
}

export async function replayDeadDeliveries(
  db: Queryable,
  filter: ReplayFilter,
  now: Date,
  onBatch?: (movedSoFar: number) => void,
  batchSize = 1000,
): Promise<number> {
  const w = replayWhere(filter);
  let moved = 0;
  // Keyset pages: a replayed delivery that dies again meanwhile (a dead endpoint, short delays) is
  // behind the cursor and not taken twice, so the replay ends. A row another statement holds (the
  // pruner, a second replay of the range) is waited for and re-checked, never skipped: with SKIP
  // LOCKED the page took the next row instead, the cursor moved past the held one, and the replay
  // ended with dead letters left. Rows are locked in keyset order, so two replays of one range
  // wait for each other rather than deadlock; one the other moved drops out of the page.
  let after: { createdAt: string; id: string } | null = null;
  for (;;) {
    const result: { rows: ReplayPage[] } = await db.query(
      // Without their row keys: a replayed dead letter of a row-ordered subscription goes at once,
      // behind nothing and blocking nothing — it may arrive after its row's later changes (docs: Ordering).
      `WITH page AS (
         SELECT id, created_at FROM walgate.deliveries
          WHERE ${w.sql} AND ($6::timestamptz IS NULL OR (created_at, id) > ($6, $7::text))
          ORDER BY created_at, id LIMIT $5 FOR UPDATE
       ), moved AS (
         UPDATE walgate.deliveries SET status = 'pending', attempts = 0, next_attempt_at = $4, schedule_started_at = $4, last_error = NULL,
                order_key = CASE WHEN holds_row THEN order_key END, order_key_old = CASE WHEN holds_row THEN order_key_old END, holds_row = false
          WHERE id = ANY (ARRAY(SELECT id FROM page))
          RETURNING 1
       ), last AS (
         -- created_at as Postgres prints it: a Date would drop the microseconds.
         SELECT created_at::text, id FROM page ORDER BY created_at DESC, id DESC LIMIT 1
       )
       SELECT (SELECT count(*)::int FROM page) AS read, (SELECT count(*)::int FROM moved) AS moved,
              (SELECT created_at FROM last) AS created_at, (SELECT id FROM last) AS id`,
      [...w.values, now, batchSize, after?.createdAt ?? null, after?.id ?? null],
    );
    const page: ReplayPage = result.rows[0]!;
    moved += page.moved;
    onBatch?.(moved);
    if (page.read < batchSize) break;
    after = { createdAt: page.created_at!, id: page.id! };
  }
  // Wake the workers: the replayed deliveries are due now, not at their next poll.
  if (moved > 0) await db.query(`NOTIFY ${DELIVERIES_CHANNEL}`);
  return moved;
}
