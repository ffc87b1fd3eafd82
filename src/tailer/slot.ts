import pg from 'pg';
import { PgCode, pgCode, withTransaction, type Pool, type Queryable } from '../core/db/pool.js';
import type { Logger } from '../core/log.js';
import { formatLsn, parseLsn, type Lsn } from './lsn.js';
import { readPosition, resetPosition } from './position.js';
import { completePendingGaps, hasPendingGap, recordTenantGaps, type GapReason } from './gaps.js';
import { crashPoint } from './crash-point.js';
import { currentSubscriptions, loadSavedView, replaceSavedView, type SubscriptionSpec } from './subscriptions.js';
import { alignSlotFailover, failoverCreateOption, supportsFailoverSlots } from './failover.js';

/** The slot of this database: slot names are cluster-wide, so the database name is part of it. */
export function defaultSlotName(databaseName: string): string {
  return `walgate_${databaseName.toLowerCase().replace(/[^a-z0-9_]/g, '_')}`.slice(0, 63);
}

/** The slot name for the database a connection is on. */
export async function slotNameFor(db: Queryable): Promise<string> {
  const { rows } = await db.query<{ name: string }>('SELECT current_database() AS name');
  return defaultSlotName(rows[0]!.name);
}

/**
 * Creates the slot if it does not exist yet, without waiting for a tailer: from then on Postgres
 * keeps every change for it. The management API calls this before it saves a subscription, so
 * changes made before the first tailer starts are still delivered. It must run outside a
 * transaction that has written (a Postgres rule for creating logical slots). Once a tailer has read
 * the slot (its position is saved), a missing slot is the tailer's to create: it records the gap
 * of the changes lost with the old one, which a slot created here first would hide.
 */
export async function ensureSlot(db: Queryable, failover = true): Promise<string> {
  const slot = await slotNameFor(db);
  const { rowCount } = await db.query(
    `SELECT 1 FROM pg_replication_slots WHERE slot_name = $1
     UNION ALL SELECT 1 FROM walgate.tailer_state WHERE slot_name = $1`,
    [slot],
  );
  if (!rowCount) {
    // Postgres 17+: a failover slot (failover.ts); a tailer with TAILER_SLOT_FAILOVER=false alters it back.
    const sql =
      failover && (await supportsFailoverSlots(db))
        ? `SELECT pg_create_logical_replication_slot($1, 'pgoutput', failover => true)`
        : `SELECT pg_create_logical_replication_slot($1, 'pgoutput')`;
    await db.query(sql, [slot]).catch((err: unknown) => {
      if (pgCode(err) !== PgCode.duplicateObject) throw err;
    });
  }
  return slot;
}

export interface SlotStart {
  processedLsn: Lsn;
  subscriptions: SubscriptionSpec[];
}

interface SlotRow {
  wal_status: string | null;
  confirmed_flush_lsn: string | null;
  active_pid: number | null;
}

async function readSlot(pool: Pool, slotName: string): Promise<SlotRow | undefined> {
  const { rows } = await pool.query<SlotRow>(
    `SELECT wal_status, confirmed_flush_lsn::text, active_pid FROM pg_replication_slots WHERE slot_name = $1`,
    [slotName],
  );
  return rows[0];
}

/**
 * Fencing, the reading side: a new leader holds the lock, but the previous leader's walsender
 * may still be streaming (and acknowledging) until Postgres notices it is gone. Position and view
 * are read only once no process reads the slot, so they cannot move under us afterwards.
 */
async function waitUntilUnread(pool: Pool, slotName: string, timeoutMs = 60_000): Promise<SlotRow | undefined> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const slot = await readSlot(pool, slotName);
    if (!slot || slot.active_pid === null) return slot;
    if (Date.now() > until) throw new Error(`the slot ${slotName} is still read by process ${slot.active_pid}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/**
 * Makes sure the slot exists and returns where to resume, with the subscription view that belongs
 * to that position.
 * - New slot: created through the replication protocol with an exported snapshot, and the
 *   subscriptions are read in exactly that snapshot, so the view matches the slot's first position.
 * - Existing slot and state: the saved view and position.
 * - A slot that Postgres invalidated (retained WAL over max_slot_wal_keep_size) cannot resume: it
 *   is dropped and created anew, and the gap is recorded.
 *
 * Gap first, slot second: the gap is recorded (pending, with no end yet) before the old slot is
 * dropped or the new one created, and ended once the new slot's first position is known. A crash
 * in between leaves the gap recorded either way: the next start finds the slot still missing (and
 * the pending gap, so it records no second one), or finds the new slot and ends the gap there.
 */
export async function prepareSlot(pool: Pool, replicationUrl: string, slotName: string, log: Logger, failover = true): Promise<SlotStart> {
  let slot = await waitUntilUnread(pool, slotName);
  const saved = await readPosition(pool, slotName);
  const lost: GapReason | undefined = slot?.wal_status === 'lost' ? 'slot_lost' : !slot && saved ? 'slot_missing' : undefined;
  if (lost && saved) {
    await recordPendingGap(pool, slotName, lost, saved, log);
    await crashPoint('slot-gap-recorded');
  }
  if (slot?.wal_status === 'lost') {
    await pool.query('SELECT pg_drop_replication_slot($1)', [slotName]);
    slot = undefined;
  }
  if (!slot) {
    const start = await createSlot(pool, replicationUrl, slotName, failover);
    await completePendingGaps(pool, slotName, formatLsn(start.processedLsn));
    return start;
  }
  // A new slot whose gap a crash left pending (the state below still belongs to the old slot).
  if (slot.confirmed_flush_lsn) await completePendingGaps(pool, slotName, slot.confirmed_flush_lsn);
  // Unread now: the one moment its failover setting may change.
  await alignSlotFailover(pool, replicationUrl, slotName, failover, log);
  if (!saved) {
    // A slot without our state (state wiped): start from the slot with today's subscriptions.
    const subscriptions = await currentSubscriptions(pool);
    const processedLsn = parseLsn(slot.confirmed_flush_lsn ?? '0/0');
    await withTransaction(pool, async (c) => {
      await replaceSavedView(c, subscriptions, formatLsn(processedLsn));
      await resetPosition(c, slotName, formatLsn(processedLsn));
    });
    return { processedLsn, subscriptions };
  }
  // Both are positions below which everything is settled (session.ts): the slot's confirmed
  // position, and ours, written now and then in walgate.tailer_state. The slot's is usually ahead;
  // ours is WAL-logged, so after a Postgres crash (which can take a slot's position back to its
  // last checkpoint) it is the one that has not moved back.
  let processedLsn = parseLsn(slot.confirmed_flush_lsn ?? saved);
  if (parseLsn(saved) > processedLsn) processedLsn = parseLsn(saved);
  return { processedLsn, subscriptions: await loadSavedView(pool, formatLsn(processedLsn)) };
}

/** The subscriptions active at a saved position: those that missed changes when capture stopped there. */
export async function activeAt(db: Queryable, saved: string): Promise<SubscriptionSpec[]> {
  return (await loadSavedView(db, saved)).filter((s) => s.active);
}

/**
 * The slot was lost or dropped: the changes between the last processed position and the new
 * slot's first are never captured. Recorded (with the subscriptions active then) for operators to
 * see and acknowledge, not only logged — unless a crashed start already recorded it.
 */
async function recordPendingGap(pool: Pool, slotName: string, reason: GapReason, saved: string, log: Logger): Promise<void> {
  if (await hasPendingGap(pool, slotName)) return;
  const { rows } = await pool.query<{ updated_at: Date | null; now: Date }>(
    'SELECT (SELECT updated_at FROM walgate.tailer_state WHERE slot_name = $1) AS updated_at, now() AS now',
    [slotName],
  );
  const gap = { slotName, reason, fromLsn: saved, toLsn: null, fromTime: rows[0]!.updated_at, toTime: rows[0]!.now };
  const affected = await activeAt(pool, saved);
  const ids = await recordTenantGaps(pool, { ...gap, affected });
  log.error(
    { ...gap, gaps: ids, subscriptions: affected.length },
    reason === 'slot_lost'
      ? 'the replication slot lost WAL it needed (max_slot_wal_keep_size?): recreating it; changes in the gap were not captured'
      : 'the replication slot was missing: creating it; changes in the gap were not captured',
  );
}

async function createSlot(pool: Pool, replicationUrl: string, slotName: string, failover: boolean): Promise<SlotStart> {
  const repl = new pg.Client({ connectionString: replicationUrl, replication: 'database' } as pg.ClientConfig);
  repl.on('error', () => undefined); // a dying connection fails the query below; that is enough
  await repl.connect();
  try {
    const option = await failoverCreateOption(pool, failover);
    const created = await repl.query(`CREATE_REPLICATION_SLOT "${slotName}" LOGICAL pgoutput (SNAPSHOT 'export'${option})`);
    const row = created.rows[0] as { consistent_point: string; snapshot_name: string };
    await crashPoint('slot-created');
    const processedLsn = parseLsn(row.consistent_point);
    // The exported snapshot lives until the next command on `repl`: read and save the view in it.
    const subscriptions = await withTransaction(pool, async (c) => {
      await c.query('SET TRANSACTION ISOLATION LEVEL REPEATABLE READ');
      await c.query(`SET TRANSACTION SNAPSHOT '${row.snapshot_name.replaceAll("'", "''")}'`);
      const specs = await currentSubscriptions(c);
      await replaceSavedView(c, specs, row.consistent_point);
      await resetPosition(c, slotName, row.consistent_point);
      return specs;
    });
    return { processedLsn, subscriptions };
  } finally {
    await repl.end().catch(() => undefined);
  }
}
