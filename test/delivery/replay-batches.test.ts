import { expect } from 'chai';
import pg from 'pg';
import type { Pool } from '../../src/core/db/pool.js';
import { replayDeadDeliveries } from '../../src/delivery/sql/history.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';

// A replay moves dead letters back in keyset pages. A row that another statement holds at that
// moment (the pruner, a second replay of the same range) must be waited for, not skipped: a page
// that came back short because of a skipped row once ended the replay with dead letters left.

describe('delivery: a replay of dead letters in pages', function () {
  this.timeout(60_000);
  let db: TestDatabase;
  let pool: pg.Pool;
  before(async () => {
    db = await createTestDatabase();
    pool = new pg.Pool({ connectionString: db.url, max: 4 });
    await pool.query(`
      INSERT INTO walgate.projects (id) VALUES ('p');
      INSERT INTO walgate.environments (project_id, name, schema_name) VALUES ('p', 'e', 'p_e');
      INSERT INTO walgate.webhooks (id, project_id, environment, schema_name, table_name, events, url, secret)
        VALUES ('wh_1', 'p', 'e', 'p_e', 't', '{UPDATE}', 'https://example.com', '\\x00');
      INSERT INTO walgate.deliveries (id, webhook_id, event_id, event_type, status, attempts, next_attempt_at, created_at)
        SELECT 'del_' || lpad(g::text, 6, '0'), 'wh_1', 'evt_' || g, 'UPDATE', 'dead', 5, now(), now() - g * interval '1 ms'
          FROM generate_series(1, 2500) g;`);
  });
  after(async () => {
    await pool?.end();
    await db?.drop();
  });

  it('a row held by another transaction during the replay is waited for: every dead letter is replayed, none left', async () => {
    const holder = await pool.connect();
    try {
      await holder.query('BEGIN');
      // A row of the first page, held as the pruner holds the rows it is about to look at.
      await holder.query(`SELECT 1 FROM walgate.deliveries WHERE id = 'del_002000' FOR UPDATE`);
      const pages: number[] = [];
      const replay = replayDeadDeliveries(pool as unknown as Pool, { webhookId: 'wh_1' }, new Date(), (n) => pages.push(n), 1000);
      await new Promise((r) => setTimeout(r, 300));
      await holder.query('COMMIT');
      expect(await replay).to.equal(2500);
      expect(pages.at(-1)).to.equal(2500);
    } finally {
      holder.release();
    }
    const { rows } = await pool.query(`SELECT status, count(*)::int AS n FROM walgate.deliveries GROUP BY status`);
    expect(rows).to.deep.equal([{ status: 'pending', n: 2500 }]);
  });

  it('two replays of the same range at once: each dead letter moved by exactly one, no deadlock', async () => {
    await pool.query(`UPDATE walgate.deliveries SET status = 'dead'`);
    const now = new Date();
    const both = await Promise.all(
      [0, 1].map(() => replayDeadDeliveries(pool as unknown as Pool, { webhookId: 'wh_1' }, now, undefined, 100)),
    );
    expect(both[0]! + both[1]!).to.equal(2500);
    const { rows } = await pool.query(`SELECT status, count(*)::int AS n FROM walgate.deliveries GROUP BY status`);
    expect(rows).to.deep.equal([{ status: 'pending', n: 2500 }]);
  });
});
