import type { Pool } from '../../src/core/db/pool.js';

// Index tests: the plans Postgres makes for a store's statements, on tables of some size, where a
// sequential scan would be chosen if no index served.

/** A pool that EXPLAINs each statement instead of running it (pushing the plan), answering `answer`. */
export function explaining(pool: Pick<Pool, 'query'>, plans: unknown[], answer: { rows: unknown[]; rowCount?: number }): Pool {
  return {
    query: async (text: string, values?: unknown[]) => {
      const { rows } = await pool.query(`EXPLAIN (FORMAT JSON) ${text}`, values);
      plans.push(rows[0]['QUERY PLAN']);
      return answer;
    },
  } as unknown as Pool;
}

/** The sequential scans of walgate.deliveries in these plans. */
export function deliveriesSeqScans(plans: unknown[]): string[] {
  return [...JSON.stringify(plans).matchAll(/"Node Type":"Seq Scan","[^}]*?"Relation Name":"deliveries"/g)].map((m) => m[0]);
}
