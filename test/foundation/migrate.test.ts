import { expect } from 'chai';
import pg from 'pg';
import { loadMigrations, migrate, pendingMigrations } from '../../src/core/db/migrate.js';
import { createPool } from '../../src/core/db/pool.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';

describe('migrations', () => {
  let db: TestDatabase;
  afterEach(async () => db?.drop());

  it('applies every file once, in order, even when two processes start together', async () => {
    db = await createTestDatabase();
    // Start from an empty database rather than the migrated template.
    const admin = new pg.Client({ connectionString: db.url });
    await admin.connect();
    await admin.query('DROP SCHEMA walgate CASCADE');
    await admin.end();

    const a = createPool(db.url, { max: 2 });
    const b = createPool(db.url, { max: 2 });
    try {
      const [appliedA, appliedB] = await Promise.all([migrate(a), migrate(b)]);
      const all = (await loadMigrations()).map((m) => m.name);
      expect([...appliedA, ...appliedB].sort()).to.deep.equal(all.sort());
      expect(await migrate(a)).to.deep.equal([]);
      expect(await pendingMigrations(a)).to.deep.equal([]);
      const { rows } = await a.query('SELECT id, name FROM walgate.migrations ORDER BY id');
      expect(rows.map((r) => r.name)).to.deep.equal(all);
    } finally {
      await a.end();
      await b.end();
    }
  });

  it('applies a lower-numbered migration added after a higher one (009 on a database already at 010)', async () => {
    db = await createTestDatabase();
    const pool = createPool(db.url, { max: 1 });
    try {
      // A database as a release with 010 and without 009 left it.
      await pool.query(`DROP INDEX walgate.deliveries_unfinished_by_order_key, walgate.deliveries_unfinished_by_old_order_key;
                        ALTER TABLE walgate.deliveries DROP COLUMN order_key, DROP COLUMN order_key_old;
                        ALTER TABLE walgate.webhooks DROP COLUMN ordering;
                        DELETE FROM walgate.migrations WHERE id = 9`);
      const ids = (await pool.query('SELECT id FROM walgate.migrations ORDER BY id')).rows.map((r) => r.id);
      expect(ids).to.include(10).and.not.include(9);
      expect(await pendingMigrations(pool)).to.deep.equal(['009_row_ordering.sql']);
      expect(await migrate(pool)).to.deep.equal(['009_row_ordering.sql']);
      const { rows } = await pool.query(
        `SELECT column_name FROM information_schema.columns
          WHERE table_schema = 'walgate' AND (table_name, column_name) IN (('webhooks', 'ordering'), ('deliveries', 'order_key'), ('deliveries', 'order_key_old'))`,
      );
      expect(rows.map((r) => r.column_name)).to.have.members(['ordering', 'order_key', 'order_key_old']);
      expect(await migrate(pool)).to.deep.equal([]);
    } finally {
      await pool.end();
    }
  });

  it('rolls a failing migration back whole, and says which one failed', async () => {
    db = await createTestDatabase();
    const pool = createPool(db.url, { max: 1 });
    try {
      const broken = [{ id: 9001, name: '9001_broken.sql', sql: 'CREATE TABLE walgate.half (x int); SELECT no_such_function();' }];
      let error: Error | undefined;
      await migrate(pool, broken).catch((e: Error) => (error = e));
      expect(error?.message).to.contain('9001_broken.sql');
      const { rowCount } = await pool.query("SELECT 1 FROM pg_tables WHERE schemaname = 'walgate' AND tablename = 'half'");
      expect(rowCount).to.equal(0);
      const recorded = await pool.query('SELECT 1 FROM walgate.migrations WHERE id = 9001');
      expect(recorded.rowCount).to.equal(0);
    } finally {
      await pool.end();
    }
  });
});
