import type { Pool } from '../../core/db/pool.js';

/** Tailer processes on this database (leaders and standbys each hold a walgate-tailer-lock connection). */
export async function countTailers(pool: Pool): Promise<number> {
  const { rows } = await pool.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'walgate-tailer-lock'`,
  );
  return rows[0]!.n;
}
