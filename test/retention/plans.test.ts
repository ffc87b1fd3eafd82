import { expect } from 'chai';
import {
  earliestAuthExpiry,
  EVENTS_START,
  oldestHistory,
  pruneDeliveries,
  pruneEvents,
  pruneRateLimits,
  pruneRevokedSessions,
  pruneSessions,
  pruneVerificationCodes,
} from '../../src/retention/store.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { explaining as explainingPool } from '../support/plans.js';
import pg from 'pg';

// Every retention statement finds its rows through an index (sql/006_retention.sql), never by
// reading the whole table: checked on the plans Postgres makes for tables of some size, where a
// sequential scan would be chosen if no index served.

const BIG_TABLES = [
  'deliveries',
  'delivery_attempts',
  'events',
  'sessions',
  'refresh_tokens',
  'verification_codes',
  'revoked_sessions',
  'rate_limits',
];

const explaining = (pool: pg.Pool, plans: unknown[]) =>
  explainingPool(pool, plans, { rows: [{ scanned: 0, removed: 0, last_id: null }], rowCount: 0 });

function seqScans(node: any, found: string[] = []): string[] {
  if (node && typeof node === 'object') {
    if (node['Node Type'] === 'Seq Scan' && BIG_TABLES.includes(node['Relation Name'])) found.push(node['Relation Name']);
    for (const v of Object.values(node)) seqScans(v, found);
  }
  return found;
}

describe('retention: every batch reads an index range, not the table', function () {
  this.timeout(60_000);
  let db: TestDatabase;
  let pool: pg.Pool;
  before(async () => {
    db = await createTestDatabase();
    pool = new pg.Pool({ connectionString: db.url, max: 2 });
    // 50,000 deliveries of one event each, mostly recent and delivered; sessions, codes, entries, counters.
    await pool.query(`
      INSERT INTO walgate.projects (id) VALUES ('p');
      INSERT INTO walgate.environments (project_id, name, schema_name) VALUES ('p', 'e', 'p_e');
      INSERT INTO walgate.webhooks (id, project_id, environment, schema_name, table_name, events, url, secret)
        VALUES ('wh_1', 'p', 'e', 'p_e', 't', '{INSERT}', 'https://example.com', '\\x00');
      INSERT INTO walgate.events (id, schema_name, table_name, operation, committed_at, columns, record, changed_fields)
        SELECT 'evt_' || lpad(g::text, 10, '0'), 'p_e', 't', 'INSERT', now() - (50000 - g) * interval '10 s', '{id}', '{1}', '{}'
          FROM generate_series(1, 50000) g;
      INSERT INTO walgate.deliveries (id, webhook_id, event_id, event_type, status, attempts, next_attempt_at, created_at, delivered_at)
        SELECT 'del_' || lpad(g::text, 10, '0'), 'wh_1', 'evt_' || lpad(g::text, 10, '0'), 'INSERT',
               CASE WHEN g % 50 = 0 THEN 'dead' WHEN g % 97 = 0 THEN 'pending' ELSE 'delivered' END, 1,
               now(), now() - (50000 - g) * interval '10 s', CASE WHEN g % 50 <> 0 AND g % 97 <> 0 THEN now() - (50000 - g) * interval '10 s' END
          FROM generate_series(1, 50000) g;
      INSERT INTO walgate.delivery_attempts (delivery_id, attempt, started_at, duration_ms, http_status)
        SELECT 'del_' || lpad(g::text, 10, '0'), 1, now() - (50000 - g) * interval '10 s', 5, 200 FROM generate_series(1, 50000) g;
      INSERT INTO walgate.users (id, project_id, environment, email, password_hash, created_at, updated_at)
        SELECT ('00000000-0000-0000-0000-' || lpad(g::text, 12, '0'))::uuid, 'p', 'e', 'u' || g || '@x.test', 'h', now(), now()
          FROM generate_series(1, 20000) g;
      INSERT INTO walgate.sessions (id, user_id, project_id, environment, created_at, expires_at, absolute_expires_at)
        SELECT ('10000000-0000-0000-0000-' || lpad(g::text, 12, '0'))::uuid, ('00000000-0000-0000-0000-' || lpad(g::text, 12, '0'))::uuid,
               'p', 'e', now(), now() + (g - 500) * interval '1 h', now() + (g - 500) * interval '1 h' FROM generate_series(1, 20000) g;
      INSERT INTO walgate.refresh_tokens (token_hash, session_id, issued_at, expires_at)
        SELECT decode(md5(g::text), 'hex'), ('10000000-0000-0000-0000-' || lpad(g::text, 12, '0'))::uuid, now(), now() FROM generate_series(1, 20000) g;
      INSERT INTO walgate.verification_codes (user_id, purpose, code_hash, expires_at, created_at)
        SELECT ('00000000-0000-0000-0000-' || lpad(g::text, 12, '0'))::uuid, 'signup', '\\x00', now() + (g - 500) * interval '1 min', now()
          FROM generate_series(1, 20000) g;
      INSERT INTO walgate.revoked_sessions (session_id, expires_at)
        SELECT ('10000000-0000-0000-0000-' || lpad(g::text, 12, '0'))::uuid, now() + (g - 500) * interval '1 s' FROM generate_series(1, 20000) g;
      INSERT INTO walgate.rate_limits (key, points, expire)
        SELECT 'rl:' || g, 1, (extract(epoch FROM now()) * 1000)::bigint + (g - 500) * 1000 FROM generate_series(1, 20000) g;
      ANALYZE;`);
  });
  after(async () => {
    await pool?.end();
    await db?.drop();
  });

  it('plans each statement with index scans on the large tables', async () => {
    const plans: unknown[] = [];
    const q = explaining(pool, plans);
    const now = new Date();
    const weekAgo = new Date(now.getTime() - 7 * 24 * 3600 * 1000);
    await pruneDeliveries(q, 'delivered', weekAgo, 1000);
    await pruneDeliveries(q, 'dead', weekAgo, 1000);
    await pruneEvents(q, weekAgo, EVENTS_START, 1000);
    await pruneEvents(
      q,
      weekAgo,
      { committedAt: new Date(now.getTime() - 30 * 24 * 3600 * 1000).toISOString(), id: 'evt_0000001000' },
      1000,
    );
    await pruneSessions(q, now, 1000);
    await pruneVerificationCodes(q, now, 1000);
    await pruneRevokedSessions(q, now, 1000);
    await pruneRateLimits(q, now, 1000);
    await oldestHistory(q).catch(() => undefined);
    await earliestAuthExpiry(q).catch(() => undefined);
    expect(plans).to.have.length(10);
    plans.forEach((plan, i) => expect(seqScans(plan), `statement ${i}: ${JSON.stringify(plan).slice(0, 2000)}`).to.deep.equal([]));
  });
});
