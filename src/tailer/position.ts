import type { Queryable } from '../core/db/pool.js';

// walgate.tailer_state: the position below which every change of the slot is settled (delivered
// with its history row, or parked). It is WAL-logged, so after a Postgres crash, which can take a
// slot's confirmed position back to its last checkpoint, it is the one that has not moved back.

/** The saved position, if any. */
export async function readPosition(db: Queryable, slotName: string): Promise<string | undefined> {
  const { rows } = await db.query<{ processed_lsn: string }>('SELECT processed_lsn::text FROM walgate.tailer_state WHERE slot_name = $1', [
    slotName,
  ]);
  return rows[0]?.processed_lsn;
}

/** Where reading starts when the slot is new, or our state was lost: the slot's own position. */
export async function resetPosition(db: Queryable, slotName: string, lsn: string): Promise<void> {
  await db.query(
    `INSERT INTO walgate.tailer_state (slot_name, processed_lsn) VALUES ($1, $2)
     ON CONFLICT (slot_name) DO UPDATE SET processed_lsn = EXCLUDED.processed_lsn`,
    [slotName, lsn],
  );
}

/** A later settled position; never moves the saved one back. */
export async function advancePosition(db: Queryable, slotName: string, lsn: string, now: Date): Promise<void> {
  await db.query(
    `INSERT INTO walgate.tailer_state (slot_name, processed_lsn, updated_at) VALUES ($1, $2, $3)
     ON CONFLICT (slot_name) DO UPDATE SET processed_lsn = greatest(tailer_state.processed_lsn, EXCLUDED.processed_lsn),
                                           updated_at = EXCLUDED.updated_at`,
    [slotName, lsn, now],
  );
}
