import type { Queryable } from '../core/db/pool.js';

// How the replication slot stands, read from pg_replication_slots: what the tailer logs and warns
// about, what /readyz shows and what the metrics export. One query, one warning rule.

export interface SlotHealth {
  /** WAL written since the position the slot has confirmed. */
  lagBytes: number | null;
  /** WAL the slot keeps on the server (since its restart_lsn). */
  retainedBytes: number | null;
  /** Retained WAL at which the watchdog warns: half of max_slot_wal_keep_size, or `warnWhenUnlimited`. */
  warnBytes: number;
  /** max_slot_wal_keep_size in bytes; -1 when unlimited. */
  keepBytes: number;
  walStatus: string | null;
  safeWalSize: number | null;
}

interface SlotRow {
  retained: string | null;
  lag: string | null;
  wal_status: string | null;
  safe_wal_size: string | null;
  keep_size: string | null;
}

export async function slotHealth(db: Queryable, slotName: string, warnWhenUnlimited: number): Promise<SlotHealth> {
  const { rows } = await db.query<SlotRow>(
    `SELECT (pg_current_wal_lsn() - restart_lsn)::bigint AS retained, (pg_current_wal_lsn() - confirmed_flush_lsn)::bigint AS lag,
            wal_status, safe_wal_size, pg_size_bytes(current_setting('max_slot_wal_keep_size')) AS keep_size
       FROM pg_replication_slots WHERE slot_name = $1`,
    [slotName],
  );
  const r = rows[0];
  const keep = r?.keep_size == null ? -1 : Number(r.keep_size);
  return {
    lagBytes: r?.lag == null ? null : Number(r.lag),
    retainedBytes: r?.retained == null ? null : Number(r.retained),
    // Past half of what Postgres may keep (or the configured limit when it may keep everything),
    // the slot is at risk: of being invalidated, or of filling the disk.
    warnBytes: keep > 0 ? keep / 2 : warnWhenUnlimited,
    keepBytes: keep,
    walStatus: r?.wal_status ?? null,
    safeWalSize: r?.safe_wal_size == null ? null : Number(r.safe_wal_size),
  };
}

/**
 * `slot.lag` for every environment with an `_operations` subscription (docs/operations-events.md):
 * the slot is shared, and a lag past OPERATIONS_SLOT_LAG_BYTES delays every environment's changes.
 * The tailer reports a crossing once, not every check while it lasts.
 */
export async function reportSlotLag(db: Queryable, lagBytes: number, thresholdBytes: number): Promise<void> {
  await db.query(
    `INSERT INTO walgate.operations (project_id, environment, type, details)
     SELECT DISTINCT w.project_id, w.environment, 'slot.lag', jsonb_build_object('lagBytes', $1::bigint, 'thresholdBytes', $2::bigint)
       FROM walgate.webhooks w WHERE w.table_name = '_operations' AND w.active`,
    [lagBytes, thresholdBytes],
  );
}
