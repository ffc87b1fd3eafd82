import type { Pool } from '../../core/db/pool.js';

// The retry queue's statements for batches (delivery/batch-claims.ts): a new batch's id written
// on its members before it is sent, and a whole batch's lease renewed at once.

/**
 * Writes a new batch's id on its claimed members before the request goes (only while each is
 * still this worker's claim: the lease is the token), so that every retry sends the same batch.
 * Returns the ids written.
 */
export async function assignBatches(pool: Pool, members: Array<{ id: string; lease: Date; batchId: string }>): Promise<Set<string>> {
  if (members.length === 0) return new Set();
  const { rows } = await pool.query<{ id: string }>(
    `UPDATE walgate.deliveries d SET batch_id = m.batch_id
       FROM unnest($1::text[], $2::timestamptz[], $3::text[]) AS m(id, lease, batch_id)
      WHERE d.id = m.id AND d.next_attempt_at = m.lease AND d.status IN ('pending', 'retrying')
      RETURNING d.id`,
    [members.map((m) => m.id), members.map((m) => m.lease), members.map((m) => m.batchId)],
  );
  return new Set(rows.map((r) => r.id));
}

/** Extends the claim of every member of a batch from now (the send); false, renewing none, unless all are still this claim's. */
export async function renewBatchLease(pool: Pool, ids: string[], lease: Date, until: Date): Promise<boolean> {
  const { rows } = await pool.query<{ n: number }>(
    `WITH renewed AS (
       UPDATE walgate.deliveries SET next_attempt_at = $3
        WHERE id = ANY ($1) AND next_attempt_at = $2 AND status IN ('pending', 'retrying')
          -- All or none: a batch whose members are not all ours any more is not sent.
          AND (SELECT count(*) FROM walgate.deliveries
                WHERE id = ANY ($1) AND next_attempt_at = $2 AND status IN ('pending', 'retrying')) = cardinality($1::text[])
       RETURNING 1)
     SELECT count(*)::int AS n FROM renewed`,
    [ids, lease, until],
  );
  return rows[0]!.n === ids.length;
}
