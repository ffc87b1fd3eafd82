// Mocha global fixtures: one PostgreSQL server for the whole run (embedded, or the server of
// TEST_DATABASE_URL / DATABASE_URL), and a migrated template database that every test file clones.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { startEmbeddedPostgres, type EmbeddedCluster } from '../../src/core/db/embedded.js';
import { migrate } from '../../src/core/db/migrate.js';
import { createPool } from '../../src/core/db/pool.js';

export const TEMPLATE_DATABASE = 'walgate_template';

let cluster: EmbeddedCluster | undefined;
let clusterDir: string | undefined;

function withDatabase(url: string, database: string): string {
  const u = new URL(url);
  u.pathname = `/${database}`;
  return u.toString();
}

export async function mochaGlobalSetup(): Promise<void> {
  const given = process.env.TEST_DATABASE_URL ?? process.env.DATABASE_URL;
  let adminUrl: string;
  if (given) {
    adminUrl = withDatabase(given, 'postgres');
  } else {
    clusterDir = await mkdtemp(path.join(tmpdir(), 'walgate-test-'));
    cluster = await startEmbeddedPostgres({
      dir: clusterDir,
      database: 'postgres',
      // Durability is not what these tests measure (the crash tests kill walgate, not Postgres).
      settings: {
        fsync: 'off',
        synchronous_commit: 'off',
        full_page_writes: 'off',
        max_replication_slots: 60,
        max_wal_senders: 60,
        max_connections: 400,
      },
    });
    adminUrl = cluster.urlFor('postgres');
  }
  process.env.WALGATE_TEST_ADMIN_URL = adminUrl;

  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    await admin.query(`DROP DATABASE IF EXISTS ${TEMPLATE_DATABASE}`);
    await admin.query(`CREATE DATABASE ${TEMPLATE_DATABASE}`);
  } finally {
    await admin.end();
  }
  const pool = createPool(withDatabase(adminUrl, TEMPLATE_DATABASE), { max: 1 });
  try {
    await migrate(pool);
  } finally {
    await pool.end();
  }
}

export async function mochaGlobalTeardown(): Promise<void> {
  await cluster?.stop();
  if (clusterDir) await rm(clusterDir, { recursive: true, force: true });
}
