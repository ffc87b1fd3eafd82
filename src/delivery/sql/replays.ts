import type { Queryable } from '../../core/db/pool.js';

// walgate.replays: replays of dead letters as jobs (replays.ts runs them).

export interface ReplayRow {
  id: string;
  webhook_id: string;
  since: Date | null;
  until: Date | null;
  state: 'running' | 'done' | 'failed';
  count: number;
  replayed: number;
  created_at: Date;
  finished_at: Date | null;
}

const COLUMNS = 'id, webhook_id, since, until, state, count, replayed, created_at, finished_at';

export async function insertReplay(
  db: Queryable,
  r: Pick<ReplayRow, 'id' | 'webhook_id' | 'since' | 'until' | 'state' | 'count' | 'replayed' | 'created_at' | 'finished_at'>,
  leaseUntil: Date | null,
): Promise<ReplayRow> {
  const { rows } = await db.query<ReplayRow>(
    `INSERT INTO walgate.replays (id, webhook_id, since, until, state, count, replayed, lease_until, created_at, finished_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) RETURNING ${COLUMNS}`,
    [r.id, r.webhook_id, r.since, r.until, r.state, r.count, r.replayed, leaseUntil, r.created_at, r.finished_at],
  );
  return rows[0]!;
}

export async function findReplay(db: Queryable, webhookId: string, id: string): Promise<ReplayRow | undefined> {
  const { rows } = await db.query<ReplayRow>(`SELECT ${COLUMNS} FROM walgate.replays WHERE id = $1 AND webhook_id = $2`, [id, webhookId]);
  return rows[0];
}

/** Records progress and extends the lease; false when the job is no longer this runner's (finished or taken over). */
export async function replayProgress(db: Queryable, id: string, replayed: number, leaseUntil: Date): Promise<boolean> {
  const { rowCount } = await db.query(`UPDATE walgate.replays SET replayed = $2, lease_until = $3 WHERE id = $1 AND state = 'running'`, [
    id,
    replayed,
    leaseUntil,
  ]);
  return (rowCount ?? 0) > 0;
}

export async function finishReplay(db: Queryable, id: string, state: 'done' | 'failed', replayed: number, at: Date): Promise<void> {
  await db.query(
    `UPDATE walgate.replays SET state = $2, replayed = $3, finished_at = $4, lease_until = NULL WHERE id = $1 AND state = 'running'`,
    [id, state, replayed, at],
  );
}

/** Takes over one running job whose lease ran out (its process stopped), leased to the caller until `leaseUntil`. */
export async function takeAbandonedReplay(db: Queryable, now: Date, leaseUntil: Date): Promise<ReplayRow | undefined> {
  const { rows } = await db.query<ReplayRow>(
    `UPDATE walgate.replays SET lease_until = $2 WHERE id = (
       SELECT id FROM walgate.replays WHERE state = 'running' AND lease_until < $1 ORDER BY lease_until LIMIT 1 FOR UPDATE SKIP LOCKED)
     RETURNING ${COLUMNS}`,
    [now, leaseUntil],
  );
  return rows[0];
}
