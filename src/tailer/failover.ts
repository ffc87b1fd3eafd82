import pg from 'pg';
import type { Queryable } from '../core/db/pool.js';
import type { Logger } from '../core/log.js';

// Failover slots (Postgres 17+). A logical slot lives on one server: when a standby is promoted,
// a plain slot is gone and every change since the tailer's last position with it (a recorded gap,
// slot.ts). A slot created or altered with `failover` is copied to standbys that run with
// sync_replication_slots=on (and hot_standby_feedback=on, a dbname in primary_conninfo, a
// primary_slot_name); the primary's synchronized_standby_slots makes the tailer wait until those
// standbys have the WAL it reads, so the copy never lags behind what was delivered. After a
// promotion the tailer finds the copy on the new primary and reads on from it: nothing is lost,
// at worst some changes since the copy's last sync are delivered again (same event ids).
// docs/failover.md.

export async function supportsFailoverSlots(db: Queryable): Promise<boolean> {
  const { rows } = await db.query<{ v: number }>(`SELECT current_setting('server_version_num')::int AS v`);
  return rows[0]!.v >= 170000;
}

/** The option list of CREATE_REPLICATION_SLOT for a failover slot (empty below 17 or when not wanted). */
export async function failoverCreateOption(db: Queryable, wanted: boolean): Promise<string> {
  return wanted && (await supportsFailoverSlots(db)) ? ', FAILOVER true' : '';
}

/**
 * An existing slot made to match the setting (a slot created before the upgrade to 17, or by an
 * older walgate): ALTER_REPLICATION_SLOT over a replication connection, while no one reads the
 * slot. A failure is logged, not fatal: capture works without it, only a failover would lose it.
 */
export async function alignSlotFailover(
  db: Queryable,
  replicationUrl: string,
  slotName: string,
  wanted: boolean,
  log: Logger,
): Promise<void> {
  if (!(await supportsFailoverSlots(db))) return;
  const { rows } = await db.query<{ failover: boolean }>('SELECT failover FROM pg_replication_slots WHERE slot_name = $1', [slotName]);
  if (!rows[0] || rows[0].failover === wanted) return;
  const repl = new pg.Client({ connectionString: replicationUrl, replication: 'database' } as pg.ClientConfig);
  repl.on('error', () => undefined);
  try {
    await repl.connect();
    // The slot name was checked by the caller (WalTailer): it cannot be a parameter here.
    await repl.query(`ALTER_REPLICATION_SLOT "${slotName}" (FAILOVER ${wanted})`);
    log.info({ slot: slotName, failover: wanted }, wanted ? 'the slot is now a failover slot' : 'the slot is no longer a failover slot');
  } catch (err) {
    log.warn({ err, slot: slotName }, 'could not change the failover setting of the slot');
  } finally {
    await repl.end().catch(() => undefined);
  }
}

export interface FailoverStatus {
  /** Postgres 17 or later. */
  supported: boolean;
  /** The slot is a failover slot. */
  enabled: boolean;
  /** A standby keeps a synchronised copy of the slot (see `basis`). */
  ready: boolean;
  /**
   * How `ready` was decided. `standby`: TAILER_STANDBY_URL was asked and holds a synced, valid copy.
   * `synchronized_standby_slots`: the primary waits for these physical slots, all read by a standby.
   */
  basis: 'standby' | 'synchronized_standby_slots' | 'none';
  /** Physical slots named by synchronized_standby_slots that no standby reads now: the tailer waits for them. */
  standbySlotsInactive: string[];
  /** What was found, when not ready. */
  reason: string | null;
}

/** Whether a standby synchronises the slot: asked of the standby when its URL is given, else inferred on the primary. */
export async function failoverStatus(db: Queryable, slotName: string, standbyUrl?: string): Promise<FailoverStatus> {
  const none = { basis: 'none' as const, standbySlotsInactive: [] as string[] };
  if (!(await supportsFailoverSlots(db))) {
    return { supported: false, enabled: false, ready: false, ...none, reason: 'Postgres before 17 has no failover slots' };
  }
  const { rows } = await db.query<{ failover: boolean | null; standby_slots: string; inactive: string[] }>(
    `SELECT (SELECT failover FROM pg_replication_slots WHERE slot_name = $1) AS failover,
            coalesce(current_setting('synchronized_standby_slots', true), '') AS standby_slots,
            ARRAY(SELECT s FROM unnest(string_to_array(replace(coalesce(current_setting('synchronized_standby_slots', true), ''), ' ', ''), ',')) s
                   WHERE s <> '' AND NOT EXISTS (SELECT 1 FROM pg_replication_slots p WHERE p.slot_name = s AND p.slot_type = 'physical' AND p.active)) AS inactive`,
    [slotName],
  );
  const r = rows[0]!;
  const enabled = r.failover === true;
  const standbySlotsInactive = enabled ? r.inactive : [];
  if (!enabled)
    return { supported: true, enabled, ready: false, ...none, reason: r.failover === null ? 'no slot yet' : 'not a failover slot' };
  if (standbyUrl) return { supported: true, enabled, standbySlotsInactive, ...(await askStandby(standbyUrl, slotName)) };
  if (!r.standby_slots.trim()) {
    return { supported: true, enabled, ready: false, ...none, reason: 'synchronized_standby_slots is not set on the primary' };
  }
  const ready = standbySlotsInactive.length === 0;
  return {
    supported: true,
    enabled,
    ready,
    basis: 'synchronized_standby_slots',
    standbySlotsInactive,
    reason: ready ? null : `no standby reads ${standbySlotsInactive.join(', ')}`,
  };
}

async function askStandby(url: string, slotName: string): Promise<Pick<FailoverStatus, 'ready' | 'basis' | 'reason'>> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2000, query_timeout: 2000 });
  client.on('error', () => undefined);
  try {
    await client.connect();
    const { rows } = await client.query<{
      recovery: boolean;
      synced: boolean | null;
      temporary: boolean | null;
      invalid: string | null;
      conflicting: boolean | null;
    }>(
      `SELECT pg_is_in_recovery() AS recovery, s.synced, s.temporary, s.invalidation_reason AS invalid, s.conflicting
         FROM (SELECT 1) one LEFT JOIN pg_replication_slots s ON s.slot_name = $1`,
      [slotName],
    );
    const r = rows[0]!;
    const reason = !r.recovery
      ? 'TAILER_STANDBY_URL is not a standby'
      : r.synced === null
        ? 'the standby has no copy of the slot (sync_replication_slots, hot_standby_feedback, dbname in primary_conninfo?)'
        : !r.synced
          ? 'the standby has a slot of that name that is not synchronised'
          : r.invalid || r.conflicting
            ? `the standby's copy is invalidated (${r.invalid ?? 'conflicting'})`
            : r.temporary
              ? // Kept temporary until the standby has caught up with the slot; a promotion would drop it.
                'the standby has not caught up with the slot yet'
              : null;
    return { ready: reason === null, basis: 'standby', reason };
  } catch {
    // Not the driver's text: it can name hosts and users, and /readyz may be reachable from outside.
    return { ready: false, basis: 'standby', reason: 'the standby does not answer' };
  } finally {
    await client.end().catch(() => undefined);
  }
}
