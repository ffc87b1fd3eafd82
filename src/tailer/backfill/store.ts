import { randomId } from '../../core/crypto/tokens.js';
import type { Queryable } from '../../core/db/pool.js';

// walgate.backfills (sql/043): one row per backfill; the only module that writes SQL for it.

export type BackfillState = 'running' | 'done' | 'cancelled' | 'failed';

export interface Backfill {
  id: string;
  webhookId: string;
  gapId: string | null;
  state: BackfillState;
  filter: Record<string, unknown> | null;
  sortColumn: string | null;
  since: string | null;
  /** Rows delivered as READ so far. */
  rows: number;
  pages: number;
  totalEstimate: number | null;
  error: string | null;
  createdAt: string;
  updatedAt: string;
  finishedAt: string | null;
}

/** What the tailer needs besides the view: where the next page starts. */
export interface RunningBackfill extends Backfill {
  cursor: string[] | null;
  /** The sort values of the table's last row when it started; null: it was empty. */
  until: string[] | null;
}

const COLUMNS = `id, webhook_id AS "webhookId", gap_id AS "gapId", state, filter, sort_column AS "sortColumn", since,
  rows::float8 AS rows, pages, total_estimate::float8 AS "totalEstimate", error, created_at AS "createdAt",
  updated_at AS "updatedAt", finished_at AS "finishedAt", cursor, until_key AS until`;

type BackfillRow = Omit<RunningBackfill, 'createdAt' | 'updatedAt' | 'finishedAt'> & {
  createdAt: Date;
  updatedAt: Date;
  finishedAt: Date | null;
};

function running(r: BackfillRow): RunningBackfill {
  return {
    ...r,
    createdAt: r.createdAt.toISOString(),
    updatedAt: r.updatedAt.toISOString(),
    finishedAt: r.finishedAt?.toISOString() ?? null,
  };
}

/** The view a client sees (no cursor: its text form is an internal detail). */
export function backfillView(b: RunningBackfill): Backfill {
  const { cursor: _cursor, until: _until, ...view } = b;
  return view;
}

export interface NewBackfill {
  webhookId: string;
  gapId: string | null;
  filter: Record<string, unknown> | null;
  sortColumn: string | null;
  since: string | null;
  until: string[] | null;
  totalEstimate: number;
}

/** Inserts a running backfill; a second unfinished one for the subscription is a unique violation (23505). */
export async function insertBackfill(db: Queryable, b: NewBackfill, now: Date): Promise<RunningBackfill> {
  const { rows } = await db.query<BackfillRow>(
    `INSERT INTO walgate.backfills (id, webhook_id, gap_id, state, filter, sort_column, since, until_key, total_estimate, created_at, updated_at)
     VALUES ($1, $2, $3, 'running', $4::jsonb, $5, $6, $7, $8, $9, $9) RETURNING ${COLUMNS}`,
    [
      randomId('bf_'),
      b.webhookId,
      b.gapId,
      b.filter === null ? null : JSON.stringify(b.filter),
      b.sortColumn,
      b.since,
      b.until,
      b.totalEstimate,
      now,
    ],
  );
  return running(rows[0]!);
}

export async function getBackfill(db: Queryable, webhookId: string, id: string): Promise<RunningBackfill | undefined> {
  const { rows } = await db.query<BackfillRow>(`SELECT ${COLUMNS} FROM walgate.backfills WHERE id = $1 AND webhook_id = $2`, [
    id,
    webhookId,
  ]);
  return rows[0] ? running(rows[0]) : undefined;
}

/** The subscription's unfinished backfill, if any. */
export async function runningBackfillOf(db: Queryable, webhookId: string): Promise<RunningBackfill | undefined> {
  const { rows } = await db.query<BackfillRow>(`SELECT ${COLUMNS} FROM walgate.backfills WHERE webhook_id = $1 AND state = 'running'`, [
    webhookId,
  ]);
  return rows[0] ? running(rows[0]) : undefined;
}

/** A subscription's backfills, newest first (at most 100). */
export async function listBackfills(db: Queryable, webhookId: string): Promise<RunningBackfill[]> {
  const { rows } = await db.query<BackfillRow>(
    `SELECT ${COLUMNS} FROM walgate.backfills WHERE webhook_id = $1 ORDER BY created_at DESC, id LIMIT 100`,
    [webhookId],
  );
  return rows.map(running);
}

/** Every unfinished backfill, oldest first: what the tailer works on (and resumes after a restart). */
export async function runningBackfills(db: Queryable, limit: number): Promise<RunningBackfill[]> {
  const { rows } = await db.query<BackfillRow>(
    `SELECT ${COLUMNS} FROM walgate.backfills WHERE state = 'running' ORDER BY created_at, id LIMIT $1`,
    [limit],
  );
  return rows.map(running);
}

/** Stops a running backfill (a page already handed on is still delivered); a finished one stays as it is. */
export async function cancelBackfill(db: Queryable, webhookId: string, id: string, now: Date): Promise<RunningBackfill | undefined> {
  const { rows } = await db.query<BackfillRow>(
    `UPDATE walgate.backfills SET state = CASE WHEN state = 'running' THEN 'cancelled' ELSE state END,
            finished_at = coalesce(finished_at, $3), updated_at = CASE WHEN state = 'running' THEN $3 ELSE updated_at END
      WHERE id = $1 AND webhook_id = $2 RETURNING ${COLUMNS}`,
    [id, webhookId, now],
  );
  return rows[0] ? running(rows[0]) : undefined;
}

/**
 * A page's rows are settled: the next page starts after it. Only while still running (a cancel
 * wins); `done` when the table has no more rows. False when it was no longer running.
 */
export async function recordPage(
  db: Queryable,
  id: string,
  page: { cursor: string[] | null; rows: number; done: boolean },
  now: Date,
): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE walgate.backfills SET cursor = $2, rows = rows + $3, pages = pages + 1, updated_at = $5::timestamptz,
            state = CASE WHEN $4::boolean THEN 'done' ELSE state END, finished_at = CASE WHEN $4::boolean THEN $5::timestamptz ELSE NULL END
      WHERE id = $1 AND state = 'running'`,
    [id, page.cursor, page.rows, page.done, now],
  );
  return Boolean(rowCount);
}

/** A backfill that cannot go on (its table dropped, its key gone): failed, with the reason. */
export async function failBackfill(db: Queryable, id: string, error: string, now: Date): Promise<void> {
  await db.query(
    `UPDATE walgate.backfills SET state = 'failed', error = $2, updated_at = $3, finished_at = $3 WHERE id = $1 AND state = 'running'`,
    [id, error, now],
  );
}

/** Where a backfill reads (its subscription's table), whether the subscription takes deliveries now, and whether it still runs. */
export async function backfillTarget(
  db: Queryable,
  backfillId: string,
): Promise<{ schema: string; table: string; active: boolean; running: boolean } | undefined> {
  const { rows } = await db.query<{ schema: string; table: string; active: boolean; running: boolean }>(
    `SELECT w.schema_name AS schema, w.table_name AS "table", w.active, b.state = 'running' AS running
       FROM walgate.backfills b JOIN walgate.webhooks w ON w.id = b.webhook_id WHERE b.id = $1`,
    [backfillId],
  );
  return rows[0];
}
