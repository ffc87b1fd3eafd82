import { setTimeout as sleep } from 'node:timers/promises';
import { expect } from 'chai';
import pg from 'pg';
import type { Pool } from '../../src/core/db/pool.js';
import { bringForwardPage } from '../../src/delivery/sql/catch-up.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { deliveriesSeqScans, explaining as explainingPool } from '../support/plans.js';
import { insertSubscription } from '../support/subscriptions.js';
import type { ReceivedRequest } from '../support/receiver.js';
import { hexSignature } from '../../src/delivery/signing.js';
import { eventually, startPipeline, type Pipeline } from './support.js';

// After a receiver outage the probe's success closes the breaker; the deliveries waiting in the
// retry queue for a retry slot then come due at once (src/delivery/catch-up.ts) — not a whole retry
// interval later. Leases are never brought forward, and other endpoints keep their slots.

const COOLDOWN = 1500;
/** The next retry slot after a failure: far longer than any wait below. */
const SLOT_MS = 60_000;

interface Change {
  project: string;
  row: number;
  version: number;
}

const changeOf = (r: ReceivedRequest): Change => {
  const body = JSON.parse(r.body);
  return { project: body.project_id, row: body.record.id, version: body.record.version };
};

/** Which subscription a request is for, when they share the endpoint: the secret it is signed with. */
const signedWith = (secret: string, r: ReceivedRequest) => r.headers['x-webhook-signature'] === hexSignature(secret, r.body);

async function breakerOpen(p: Pipeline, projectId: string, url: string): Promise<Date> {
  const { rows } = await eventually(
    () => p.t.ctx.pool.query('SELECT opened_until FROM walgate.endpoint_breakers WHERE project_id = $1 AND url = $2', [projectId, url]),
    (r) => r.rows[0]?.opened_until != null,
  );
  return rows[0].opened_until;
}

/** Every delivery of these subscriptions in the queue, and none delivered: the stream is done with them. */
async function parked(p: Pipeline, webhookIds: string[], count: number): Promise<Array<Record<string, any>>> {
  return eventually(
    async () => (await Promise.all(webhookIds.map((id) => p.delivery(id)))).flat(),
    (r) => r.length === count && r.every((d) => d.status === 'pending' || d.status === 'retrying'),
    15_000,
  );
}

describe('delivery: when a breaker closes, its waiting retries come due at once', function () {
  this.timeout(90_000);
  let p: Pipeline;
  before(async () => {
    p = await startPipeline({
      WEBHOOK_RETRY_DELAYS_MS: `0,${SLOT_MS},${SLOT_MS},${SLOT_MS}`,
      WEBHOOK_BREAKER_FAILURES: '3',
      WEBHOOK_BREAKER_COOLDOWN_MS: String(COOLDOWN),
      WEBHOOK_TIMEOUT_MS: '10000',
    });
    await p.writer.query('CREATE TABLE shop_master.items (id int PRIMARY KEY, version int NOT NULL)');
    await p.t.provision({ projectId: 'other', name: 'master' });
    await p.writer.query('CREATE TABLE other_master.items (id int PRIMARY KEY, version int NOT NULL)');
  });
  after(() => p?.close());
  beforeEach(async () => {
    await p.removeSubscriptions();
    await p.t.ctx.pool.query('DELETE FROM walgate.endpoint_breakers');
    await p.writer.query('TRUNCATE shop_master.items, shop_master.orders, other_master.items');
    p.receiver.requests.length = 0;
  });

  it('every parked delivery, row-ordered ones too, is delivered within seconds of the probe, each row in order', async () => {
    let down = true;
    p.receiver.behave = () => ({ status: down ? 503 : 200 });
    const url = `${p.receiver.url}/hook`;
    // Two subscriptions to one endpoint (project, environment, URL): one row-ordered. Their
    // secrets tell the receiver which one a request is for.
    const ordered = await p.subscribe({ table: 'items', ordering: 'row', url, secret: 'ordered-secret-0123456789' });
    const unordered = await p.subscribe({ table: 'items', url, secret: 'unordered-secret-0123456789' });
    await p.writer.query('INSERT INTO shop_master.items SELECT g, 1 FROM generate_series(1, 4) g');
    for (let v = 2; v <= 3; v++) await p.writer.query('UPDATE shop_master.items SET version = $1', [v]);
    // The first failures open the breaker; every first attempt made or held back after them, and
    // every later change of a row-ordered row (behind its head), is parked.
    await breakerOpen(p, 'shop', url);
    const waiting = await parked(p, [ordered, unordered], 24);
    // A backoff after a failure, or a wait on the open breaker (no attempt spent): both are retry slots.
    expect(waiting.filter((d) => d.retry_slot).length).to.be.at.least(16); // the unordered 12 and the ordered rows' heads
    // A wait is due at the breaker's next chance (the cool-down's end); a backoff after a real
    // failure is a whole retry interval away — that slot is what the catch-up brings forward.
    const backoffs = waiting.filter((d) => d.retry_slot && d.attempts > 0).map((d) => d.next_attempt_at.getTime());
    expect(backoffs.length).to.be.at.least(1);
    expect(Math.min(...backoffs) - Date.now(), 'the next retry slot after a failure is far').to.be.above(SLOT_MS / 2);

    // The receiver is back. After the cool-down the next request is the probe — a waiting delivery
    // (due at the cool-down's end) or the new change below; its success closes the breaker. Every
    // request from here on is answered 200, every one before was refused.
    const backAt = Date.now();
    down = false;
    const { rows } = await p.t.ctx.pool.query('SELECT opened_until FROM walgate.endpoint_breakers');
    await sleep(Math.max(0, rows[0].opened_until.getTime() - Date.now()) + 100);
    await p.writer.query('INSERT INTO shop_master.items VALUES (100, 1)');
    const done = await eventually(
      async () => [...(await p.delivery(ordered)), ...(await p.delivery(unordered))],
      (r) => r.length === 26 && r.every((d) => d.status === 'delivered'),
      20_000,
    );
    const accepted = p.receiver.requests.filter((r) => r.at >= backAt);
    const lastAt = Math.max(...accepted.map((r) => r.at));
    // At most a cool-down (a probe refused just before the return re-opened it) and seconds more.
    expect(lastAt - backAt, 'every parked delivery arrived within seconds of the return, not at its retry slot').to.be.below(
      COOLDOWN + 6000,
    );
    expect(done.filter((d) => d.http_status === 200)).to.have.length(26);

    // The row-ordered subscription's changes arrived row by row in commit order, each once.
    const orderedArrivals = accepted.filter((r) => signedWith('ordered-secret-0123456789', r)).map(changeOf);
    for (let row = 1; row <= 4; row++) {
      expect(
        orderedArrivals.filter((c) => c.row === row).map((c) => c.version),
        `row ${row}`,
      ).to.deep.equal([1, 2, 3]);
    }
    const unorderedArrivals = accepted.filter((r) => signedWith('unordered-secret-0123456789', r)).map(changeOf);
    expect(unorderedArrivals.filter((c) => c.row !== 100)).to.have.length(12);
  });

  it("another endpoint's deliveries keep their retry slots: another URL of the project, another tenant's subscription to the same URL", async () => {
    // Only shop's /hook recovers; the same URL for tenant "other", and shop's /elsewhere, keep failing.
    let down = true;
    p.receiver.behave = (req) => ({ status: !down && req.path === '/hook' && changeOf(req).project === 'shop' ? 200 : 503 });
    const url = `${p.receiver.url}/hook`;
    const recovering = await p.subscribe({ table: 'items', url });
    const elsewhere = await p.subscribe({ table: 'orders', url: `${p.receiver.url}/elsewhere` });
    const otherTenant = await insertSubscription(p.t.ctx, {
      projectId: 'other',
      environment: 'master',
      schema: 'other_master',
      table: 'items',
      url,
    });
    await p.writer.query('INSERT INTO shop_master.items SELECT g, 1 FROM generate_series(1, 4) g');
    await p.writer.query(`INSERT INTO shop_master.orders SELECT g, 'new', 1 FROM generate_series(1, 4) g`);
    await p.writer.query('INSERT INTO other_master.items SELECT g, 1 FROM generate_series(1, 4) g');
    await breakerOpen(p, 'shop', url);
    await breakerOpen(p, 'shop', `${p.receiver.url}/elsewhere`);
    await breakerOpen(p, 'other', url);
    await eventually(
      async () => (await Promise.all([recovering, elsewhere, otherTenant].map((id) => p.delivery(id)))).flat(),
      (r) => r.length === 12 && r.every((d) => d.status === 'retrying' && d.next_attempt_at.getTime() > Date.now() + SLOT_MS / 2),
      15_000,
    );
    const before = async () =>
      new Map(
        [...(await p.delivery(elsewhere)), ...(await p.delivery(otherTenant))].map((d) => [
          d.id,
          `${d.status} ${d.next_attempt_at.toISOString()}`,
        ]),
      );
    const untouched = await before();

    down = false;
    const { rows } = await p.t.ctx.pool.query(`SELECT opened_until FROM walgate.endpoint_breakers WHERE project_id = 'shop' AND url = $1`, [
      url,
    ]);
    await sleep(Math.max(0, rows[0].opened_until.getTime() - Date.now()) + 100);
    const probedAt = Date.now();
    await p.writer.query('INSERT INTO shop_master.items VALUES (100, 1)');
    await eventually(
      () => p.delivery(recovering),
      (r) => r.length === 5 && r.every((d) => d.status === 'delivered'),
      10_000,
    );
    expect(Date.now() - probedAt).to.be.below(6000);
    await sleep(2500); // past the catch-up's second pass
    // The other two endpoints' deliveries are where they were: same status, same retry slot, not sent.
    expect(await before()).to.deep.equal(untouched);
    expect(p.receiver.requests.filter((r) => r.at >= probedAt && (r.path !== '/hook' || changeOf(r).project !== 'shop'))).to.have.length(0);
  });
});

describe('delivery: a breaker closing does not bring a leased delivery forward', function () {
  this.timeout(60_000);
  let p: Pipeline;
  before(async () => {
    // The second attempt comes soon (the worker claims it, and the receiver holds it); later ones are far.
    p = await startPipeline({
      WEBHOOK_RETRY_DELAYS_MS: `0,300,${SLOT_MS},${SLOT_MS}`,
      WEBHOOK_BREAKER_FAILURES: '3',
      WEBHOOK_BREAKER_COOLDOWN_MS: String(COOLDOWN),
      WEBHOOK_TIMEOUT_MS: '10000',
    });
    await p.writer.query('CREATE TABLE shop_master.items (id int PRIMARY KEY, version int NOT NULL)');
  });
  after(() => p?.close());

  it('a delivery claimed by a worker, its request in flight to a slow receiver while the breaker closes, is sent once', async () => {
    let down = true;
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    const attempts = new Map<number, number>();
    p.receiver.behave = (req) => {
      const { row } = changeOf(req);
      const n = (attempts.get(row) ?? 0) + 1;
      attempts.set(row, n);
      // Row 1: its first attempt fails, its second (the retry queue's) is held until the end.
      if (row === 1) return n === 1 ? { status: 503 } : n === 2 ? { status: 200, after: held } : { status: 200 };
      return { status: down ? 503 : 200 };
    };
    const url = `${p.receiver.url}/hook`;
    const wh = await p.subscribe({ table: 'items', url });
    await p.writer.query('INSERT INTO shop_master.items VALUES (1, 1)');
    await eventually(
      async () => attempts.get(1) ?? 0,
      (n) => n === 2,
    );
    const [leased] = await p.delivery(wh);
    // Claimed: its next_attempt_at is the worker's lease, not a retry slot.
    expect(leased).to.include({ status: 'retrying', attempts: 1, retry_slot: false });
    expect(leased!.next_attempt_at.getTime()).to.be.above(Date.now() + 5000);

    // Meanwhile the endpoint fails and its breaker opens; those deliveries wait for far retry slots.
    await p.writer.query('INSERT INTO shop_master.items SELECT g, 1 FROM generate_series(2, 4) g');
    const openUntil = await breakerOpen(p, 'shop', url);
    await eventually(
      () => p.delivery(wh),
      (r) => r.length === 4 && r.slice(1).every((d) => d.status === 'retrying' && d.next_attempt_at.getTime() > Date.now() + SLOT_MS / 2),
      15_000,
    );
    down = false;
    await sleep(Math.max(0, openUntil.getTime() - Date.now()) + 100);
    await p.writer.query('INSERT INTO shop_master.items VALUES (5, 1)'); // the probe
    await eventually(
      () => p.delivery(wh),
      (r) => r.length === 5 && r.slice(1).every((d) => d.status === 'delivered'),
      10_000,
    );
    await sleep(2500); // past the catch-up's second pass
    // Row 1's request is still in flight: not sent again, and its lease is as the worker left it.
    expect(attempts.get(1)).to.equal(2);
    const [still] = await p.delivery(wh);
    expect(still!.next_attempt_at.getTime()).to.equal(leased!.next_attempt_at.getTime());
    release();
    const [delivered] = await eventually(
      () => p.delivery(wh),
      (r) => r[0]?.status === 'delivered',
    );
    expect(delivered).to.include({ attempts: 2, http_status: 200 });
    await sleep(500);
    expect(attempts.get(1)).to.equal(2);
  });
});

describe('delivery: the catch-up reads one index range, not the backlog', function () {
  this.timeout(60_000);
  let db: TestDatabase;
  let pool: pg.Pool;
  before(async () => {
    db = await createTestDatabase();
    pool = new pg.Pool({ connectionString: db.url, max: 2 });
    // 60,000 deliveries of one subscription: a tenth delivered, a quarter due now, the rest waiting for retry slots.
    await pool.query(`
      INSERT INTO walgate.projects (id) VALUES ('p');
      INSERT INTO walgate.environments (project_id, name, schema_name) VALUES ('p', 'e', 'p_e');
      INSERT INTO walgate.webhooks (id, project_id, environment, schema_name, table_name, events, url, secret, ordering)
        VALUES ('wh_1', 'p', 'e', 'p_e', 't', '{UPDATE}', 'https://example.com/h', '\\x00', 'row');
      INSERT INTO walgate.endpoint_breakers (project_id, environment, url) VALUES ('p', 'e', 'https://example.com/h');
      INSERT INTO walgate.deliveries (id, webhook_id, event_id, event_type, status, attempts, next_attempt_at, created_at, order_key, retry_slot)
        SELECT 'del_' || lpad(g::text, 10, '0'), 'wh_1', 'evt_' || lpad(g::text, 10, '0'), 'UPDATE',
               CASE WHEN g % 10 = 3 THEN 'delivered' WHEN g % 4 = 0 THEN 'pending' ELSE 'retrying' END, 1,
               CASE WHEN g % 4 = 0 THEN now() - interval '1 s' ELSE now() + interval '300 s' * random() END, now(), 'k' || g, g % 4 <> 0
          FROM generate_series(1, 60000) g;
      ANALYZE;`);
  });
  after(async () => {
    await pool?.end();
    await db?.drop();
  });

  it('a page walks the future part of deliveries_due_by_webhook', async () => {
    const plans: unknown[] = [];
    const explaining = explainingPool(pool, plans, { rows: [{ moved: 0, found: 0, last: null }] });
    const key = { projectId: 'p', environment: 'e', url: 'https://example.com/h' };
    await bringForwardPage(explaining, key, 'wh_1', { now: new Date(), from: new Date(0), limit: 1000 });
    const text = JSON.stringify(plans);
    expect(deliveriesSeqScans(plans), text.slice(0, 3000)).to.have.length(0);
    expect(text).to.match(/"Index Name":"deliveries_due_by_webhook"/);
    // And a pass brings every retry slot forward, leaving the rest as they were.
    const { rows: before } = await pool.query(
      `SELECT count(*)::int AS n FROM walgate.deliveries WHERE retry_slot AND status = 'retrying' AND next_attempt_at > now()`,
    );
    let from = new Date(0);
    let moved = 0;
    for (;;) {
      const r = await bringForwardPage(pool as unknown as Pool, key, 'wh_1', { now: new Date(), from, limit: 1000 });
      moved += r.moved;
      if (r.found < 1000 || !r.last) break;
      from = r.last;
    }
    expect(moved).to.be.within(before[0].n - 1000, before[0].n); // (a few slots come due on their own meanwhile)
    const { rows: after } = await pool.query(
      `SELECT count(*)::int AS n FROM walgate.deliveries WHERE status IN ('pending', 'retrying') AND next_attempt_at > now()`,
    );
    expect(after[0].n).to.equal(0);
  });
});
