import { readdir, readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { withClient, type Pool } from './pool.js';

const SQL_DIR = fileURLToPath(new URL('../../../../sql/', import.meta.url));

// Any constant works; it only has to be the same in every walgate process.
const MIGRATION_LOCK = 7_244_101;

export interface Migration {
  id: number;
  name: string;
  sql: string;
}

export async function loadMigrations(dir = SQL_DIR): Promise<Migration[]> {
  const files = (await readdir(dir)).filter((f) => /^\d+_[\w-]+\.sql$/.test(f)).sort();
  return Promise.all(
    files.map(async (name) => ({
      id: Number.parseInt(name, 10),
      name,
      sql: await readFile(dir + name, 'utf8'),
    })),
  );
}

/**
 * Applies pending migrations in order, each in its own transaction that first records itself.
 * A session advisory lock serialises processes that start together: the second one waits, then
 * finds nothing left to do. Returns the names applied by this call.
 */
export async function migrate(pool: Pool, migrations?: Migration[]): Promise<string[]> {
  const all = migrations ?? (await loadMigrations());
  return withClient(pool, async (client) => {
    await client.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK]);
    try {
      await client.query(`CREATE SCHEMA IF NOT EXISTS walgate`);
      await client.query(`CREATE TABLE IF NOT EXISTS walgate.migrations (
        id integer PRIMARY KEY,
        name text NOT NULL,
        applied_at timestamptz NOT NULL DEFAULT now()
      )`);
      const { rows } = await client.query<{ id: number }>('SELECT id FROM walgate.migrations');
      const done = new Set(rows.map((r) => r.id));
      const applied: string[] = [];
      for (const m of all) {
        if (done.has(m.id)) continue;
        await client.query('BEGIN');
        try {
          await client.query('INSERT INTO walgate.migrations (id, name) VALUES ($1, $2)', [m.id, m.name]);
          await client.query(m.sql);
          await client.query('COMMIT');
        } catch (err) {
          await client.query('ROLLBACK').catch(() => undefined);
          throw new Error(`migration ${m.name} failed: ${(err as Error).message}`, { cause: err });
        }
        applied.push(m.name);
      }
      return applied;
    } finally {
      await client.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK]).catch(() => undefined);
    }
  });
}

/** The names of migrations not yet applied (readiness checks use it). */
export async function pendingMigrations(pool: Pool): Promise<string[]> {
  const all = await loadMigrations();
  const { rows } = await pool.query<{ id: number }>('SELECT id FROM walgate.migrations').catch(() => ({ rows: [] as { id: number }[] }));
  const done = new Set(rows.map((r) => r.id));
  return all.filter((m) => !done.has(m.id)).map((m) => m.name);
}
