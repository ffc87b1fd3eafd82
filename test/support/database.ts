import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { TEMPLATE_DATABASE } from './hooks.js';

export interface TestDatabase {
  name: string;
  url: string;
  drop(): Promise<void>;
}

function adminUrl(): string {
  const url = process.env.WALGATE_TEST_ADMIN_URL;
  if (!url) throw new Error('test database server not set up (run through mocha with test/support/hooks)');
  return url;
}

async function admin<T>(fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: adminUrl() });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

/** A fresh, migrated database of its own for a test file (cloned from the template in milliseconds). */
export async function createTestDatabase(): Promise<TestDatabase> {
  const name = `walgate_t_${randomBytes(5).toString('hex')}`;
  await admin((c) => c.query(`CREATE DATABASE ${name} TEMPLATE ${TEMPLATE_DATABASE}`));
  const u = new URL(adminUrl());
  u.pathname = `/${name}`;
  return {
    name,
    url: u.toString(),
    drop: () =>
      admin(async (c) => {
        // Replication slots pin a database: drop them (and their sessions) before the database.
        // A terminated walsender takes a moment to go (and a daemon may reconnect meanwhile), so
        // this repeats until no slot is left.
        for (let attempt = 0; attempt < 50; attempt++) {
          await c.query(
            `SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots WHERE database = $1 AND active_pid IS NOT NULL`,
            [name],
          );
          await c
            .query(`SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE database = $1 AND NOT active`, [name])
            .catch(() => undefined);
          const { rowCount } = await c.query('SELECT 1 FROM pg_replication_slots WHERE database = $1', [name]);
          if (!rowCount) break;
          await new Promise((r) => setTimeout(r, 100));
        }
        await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      }),
  };
}
