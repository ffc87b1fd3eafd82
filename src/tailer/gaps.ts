import { randomId } from '../core/crypto/tokens.js';
import type { Queryable } from '../core/db/pool.js';
import type { SubscriptionSpec } from './subscriptions.js';

// walgate.capture_gaps: stretches of WAL whose changes were never captured (sql/012). A gap stays
// open until an operator acknowledges it; /readyz of both daemons and a metric read it from here,
// so it survives restarts and is seen by the api as well as the tailer.

export type GapReason = 'slot_lost' | 'slot_missing' | 'position_rewound';

export interface CaptureGap {
  id: string;
  slotName: string;
  reason: GapReason;
  fromLsn: string | null;
  toLsn: string | null;
  fromTime: string | null;
  toTime: string;
  /** The subscriptions active when capture stopped: what a backfill would repair. */
  webhookIds: string[];
  acknowledgedAt: string | null;
  acknowledgedBy: string | null;
}

const COLUMNS = `id, slot_name AS "slotName", reason, from_lsn::text AS "fromLsn", to_lsn::text AS "toLsn",
  from_time AS "fromTime", to_time AS "toTime", webhook_ids AS "webhookIds", acknowledged_at AS "acknowledgedAt",
  acknowledged_by AS "acknowledgedBy"`;

type GapRow = Omit<CaptureGap, 'fromTime' | 'toTime' | 'acknowledgedAt'> & {
  fromTime: Date | null;
  toTime: Date;
  acknowledgedAt: Date | null;
};

function gapOf(r: GapRow): CaptureGap {
  return {
    ...r,
    fromTime: r.fromTime?.toISOString() ?? null,
    toTime: r.toTime.toISOString(),
    acknowledgedAt: r.acknowledgedAt?.toISOString() ?? null,
  };
}

export interface NewGap {
  projectId: string;
  environment: string;
  slotName: string;
  reason: GapReason;
  fromLsn: string | null;
  toLsn: string | null;
  fromTime: Date | null;
  toTime: Date;
  webhookIds: string[];
}

export async function recordGap(db: Queryable, gap: NewGap): Promise<string> {
  const id = randomId('gap_');
  await db.query(
    `INSERT INTO walgate.capture_gaps (id, project_id, environment, slot_name, reason, from_lsn, to_lsn, from_time, to_time, webhook_ids)
     VALUES ($1, $2, $3, $4, $5, $6::pg_lsn, $7::pg_lsn, $8, $9, $10)`,
    [id, gap.projectId, gap.environment, gap.slotName, gap.reason, gap.fromLsn, gap.toLsn, gap.fromTime, gap.toTime, gap.webhookIds],
  );
  return id;
}

/** A project environment's gaps, newest first; `open`: only those not acknowledged yet. */
export async function listGaps(db: Queryable, projectId: string, environment: string, open: boolean): Promise<CaptureGap[]> {
  const { rows } = await db.query<GapRow>(
    `SELECT ${COLUMNS} FROM walgate.capture_gaps
      WHERE project_id = $1 AND environment = $2 AND ($3::boolean IS FALSE OR acknowledged_at IS NULL)
      ORDER BY to_time DESC, id LIMIT 500`,
    [projectId, environment, open],
  );
  return rows.map(gapOf);
}

/** Acknowledges one of a project environment's gaps (the first acknowledgement stays); undefined when it has no such gap. */
export async function acknowledgeGap(
  db: Queryable,
  id: string,
  scope: { projectId: string; environment: string },
  by: string,
  now: Date,
): Promise<CaptureGap | undefined> {
  const { rows } = await db.query<GapRow>(
    `UPDATE walgate.capture_gaps SET acknowledged_at = coalesce(acknowledged_at, $5), acknowledged_by = coalesce(acknowledged_by, $4)
      WHERE id = $1 AND project_id = $2 AND environment = $3 RETURNING ${COLUMNS}`,
    [id, scope.projectId, scope.environment, by, now],
  );
  return rows[0] ? gapOf(rows[0]) : undefined;
}

/** How many gaps nobody has acknowledged yet (all tenants): readiness and the metric. */
export async function openGapCount(db: Queryable): Promise<number> {
  const { rows } = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM walgate.capture_gaps WHERE acknowledged_at IS NULL');
  return rows[0]!.n;
}

export interface TenantGaps {
  slotName: string;
  reason: GapReason;
  fromLsn: string | null;
  /** Null while the gap is pending: recorded before the slot that ends it exists (slot.ts). */
  toLsn: string | null;
  fromTime: Date | null;
  toTime: Date;
  /** The subscriptions that missed changes, of every tenant. */
  affected: SubscriptionSpec[];
}

/**
 * One record per project environment, each naming its own subscriptions. A gap no subscription
 * was active in lost nothing anyone asked for: the caller's log line is enough. Returns the ids.
 */
export async function recordTenantGaps(db: Queryable, gap: TenantGaps): Promise<string[]> {
  const byTenant = new Map<string, SubscriptionSpec[]>();
  for (const s of gap.affected) {
    const key = JSON.stringify([s.projectId, s.environment]);
    byTenant.set(key, [...(byTenant.get(key) ?? []), s]);
  }
  const ids: string[] = [];
  for (const specs of byTenant.values()) {
    const { projectId, environment } = specs[0]!;
    ids.push(await recordGap(db, { ...gap, projectId, environment, webhookIds: specs.map((s) => s.id) }));
  }
  return ids;
}

/** Whether a slot gap was recorded and its new slot not yet known (a crash in between, slot.ts). */
export async function hasPendingGap(db: Queryable, slotName: string): Promise<boolean> {
  const { rowCount } = await db.query('SELECT 1 FROM walgate.capture_gaps WHERE slot_name = $1 AND to_lsn IS NULL LIMIT 1', [slotName]);
  return Boolean(rowCount);
}

/** Ends the pending gaps of a slot where its new slot starts. */
export async function completePendingGaps(db: Queryable, slotName: string, toLsn: string): Promise<number> {
  const { rowCount } = await db.query('UPDATE walgate.capture_gaps SET to_lsn = $2::pg_lsn WHERE slot_name = $1 AND to_lsn IS NULL', [
    slotName,
    toLsn,
  ]);
  return rowCount ?? 0;
}
