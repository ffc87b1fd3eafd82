import type { Pool, Queryable } from '../../core/db/pool.js';

// walgate.endpoint_breakers: the breakers' shared, durable state (breaker.ts keeps the rule).

/** An endpoint: the subscription's project, environment and exact URL. */
export interface EndpointKey {
  projectId: string;
  environment: string;
  url: string;
}

/** An endpoint's row, as refresh reads it. */
export interface SharedBreakerRow {
  project_id: string;
  environment: string;
  url: string;
  consecutive_failures: number;
  opened_until: Date | null;
}

export async function readBreakers(pool: Pool, keys: EndpointKey[]): Promise<SharedBreakerRow[]> {
  const { rows } = await pool.query<SharedBreakerRow>(
    `SELECT b.project_id, b.environment, b.url, b.consecutive_failures, b.opened_until
       FROM walgate.endpoint_breakers b
       JOIN unnest($1::text[], $2::text[], $3::text[]) AS k(project_id, environment, url) USING (project_id, environment, url)`,
    [keys.map((k) => k.projectId), keys.map((k) => k.environment), keys.map((k) => k.url)],
  );
  return rows;
}

/** Claims the probe until `until` when the cool-down is over and no one else probes; true when claimed. */
export async function claimProbe(pool: Pool, key: EndpointKey, until: Date, now: Date): Promise<boolean> {
  const { rowCount } = await pool.query(
    `UPDATE walgate.endpoint_breakers SET probe_until = $4, updated_at = $5
      WHERE project_id = $1 AND environment = $2 AND url = $3
        AND (opened_until IS NULL OR opened_until <= $5) AND (probe_until IS NULL OR probe_until <= $5)`,
    [key.projectId, key.environment, key.url, until, now],
  );
  return (rowCount ?? 0) > 0;
}

/**
 * Resets the endpoint's count and closes its breaker. True when this closed a breaker that was open
 * (the shared row says so, whatever this process knew): its waiting retries may be brought forward.
 */
export async function resetBreaker(pool: Pool, key: EndpointKey, now: Date): Promise<boolean> {
  // The row as it was, locked, beside the row as it becomes: RETURNING sees only the new one.
  const { rows } = await pool.query<{ was_open: boolean }>(
    `UPDATE walgate.endpoint_breakers b SET consecutive_failures = 0, opened_until = NULL, probe_until = NULL, updated_at = $4
       FROM (SELECT opened_until FROM walgate.endpoint_breakers
              WHERE project_id = $1 AND environment = $2 AND url = $3 FOR UPDATE) AS before
      WHERE b.project_id = $1 AND b.environment = $2 AND b.url = $3
      RETURNING before.opened_until IS NOT NULL AS was_open`,
    [key.projectId, key.environment, key.url, now],
  );
  return rows[0]?.was_open ?? false;
}

/**
 * A success seen by a process that knew of no failure: the failures another process counted
 * are no longer consecutive. Only a closed breaker's count is cleared (an open one closes by its probe).
 */
export async function clearFailures(pool: Pool, key: EndpointKey, now: Date): Promise<void> {
  await pool.query(
    `UPDATE walgate.endpoint_breakers SET consecutive_failures = 0, updated_at = $4
      WHERE project_id = $1 AND environment = $2 AND url = $3 AND consecutive_failures > 0 AND opened_until IS NULL`,
    [key.projectId, key.environment, key.url, now],
  );
}

/**
 * Counts a failure: opens the breaker until `openUntil` when it was the probe or reaches the
 * threshold. Returns the shared count and opening after it.
 */
export async function countFailure(
  pool: Pool,
  key: EndpointKey,
  o: { threshold: number; openUntil: Date; now: Date; probe: boolean },
): Promise<Pick<SharedBreakerRow, 'consecutive_failures' | 'opened_until'>> {
  const { rows } = await pool.query<Pick<SharedBreakerRow, 'consecutive_failures' | 'opened_until'>>(
    `INSERT INTO walgate.endpoint_breakers AS b (project_id, environment, url, consecutive_failures, opened_until, updated_at)
     VALUES ($1, $2, $3, 1, CASE WHEN $7 OR 1 >= $4 THEN $5::timestamptz END, $6)
     ON CONFLICT (project_id, environment, url) DO UPDATE SET
       consecutive_failures = b.consecutive_failures + 1,
       opened_until = CASE WHEN $7 OR (b.opened_until IS NULL AND b.consecutive_failures + 1 >= $4) THEN $5::timestamptz
                           ELSE b.opened_until END,
       probe_until = CASE WHEN $7 THEN NULL ELSE b.probe_until END,
       updated_at = $6
     RETURNING consecutive_failures, opened_until`,
    [key.projectId, key.environment, key.url, o.threshold, o.openUntil, o.now, o.probe],
  );
  return rows[0]!;
}

/** One endpoint's shared state (the health view). */
export async function readBreaker(
  db: Queryable,
  key: EndpointKey,
): Promise<Pick<SharedBreakerRow, 'consecutive_failures' | 'opened_until'> | undefined> {
  const { rows } = await db.query<Pick<SharedBreakerRow, 'consecutive_failures' | 'opened_until'>>(
    'SELECT consecutive_failures, opened_until FROM walgate.endpoint_breakers WHERE project_id = $1 AND environment = $2 AND url = $3',
    [key.projectId, key.environment, key.url],
  );
  return rows[0];
}
