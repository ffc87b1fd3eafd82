import { setTimeout as sleep } from 'node:timers/promises';
import { expect } from 'chai';
import pg from 'pg';
import { Webhook } from 'standardwebhooks';
import type { Pool } from '../../src/core/db/pool.js';
import { claimDue } from '../../src/delivery/sql/queue.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import type { ReceivedRequest } from '../support/receiver.js';
import { eventually, startPipeline, type Pipeline } from './support.js';

// Batched delivery (docs/webhooks.md: Batching): a subscription's `batch` makes one POST carry
// `{"events": [...]}`, with one webhook-id (the batch's), signed over the whole body; 2xx
// acknowledges all, anything else retries the whole batch, same id, same events.

const SECRET = 'whsec_' + Buffer.alloc(32, 9).toString('base64');

/** The events of a request verified as a Standard Webhooks receiver holding only the secret would (throws if not). */
function verifiedEvents(r: ReceivedRequest): Array<Record<string, any>> {
  const body = new Webhook(SECRET).verify(r.body, r.headers) as { events: Array<Record<string, any>> };
  expect(Object.keys(body)).to.deep.equal(['events']);
  return body.events;
}

describe('delivery: batches', function () {
  this.timeout(90_000);
  let p: Pipeline;
  before(async () => {
    p = await startPipeline({ WEBHOOK_RETRY_DELAYS_MS: '0,100,200,300,400', WEBHOOK_TIMEOUT_MS: '5000', WEBHOOK_BREAKER_FAILURES: '1000' });
  });
  after(() => p?.close());
  beforeEach(async () => {
    await p.removeSubscriptions();
    await p.writer.query('TRUNCATE shop_master.orders');
    p.receiver.requests.length = 0;
    p.receiver.behave = () => ({ status: 200 });
  });

  it('500 rows in one transaction to maxEvents 50: at most 12 requests carry all 500 events once, each verified by standardwebhooks', async () => {
    const wh = await p.subscribe({ secret: SECRET, batch: { maxEvents: 50 } });
    await p.writer.query(`INSERT INTO shop_master.orders SELECT g, 'new', g FROM generate_series(1, 500) g`);
    const seen: string[] = [];
    await eventually(
      async () => {
        seen.length = 0;
        for (const r of p.receiver.requests) seen.push(...verifiedEvents(r).map((e) => e.id as string));
        return seen.length;
      },
      (n) => n >= 500,
      30_000,
    );
    const requests = p.receiver.requests;
    expect(requests.length, 'requests').to.be.at.most(12);
    expect(seen).to.have.length(500);
    expect(new Set(seen).size, 'each event once').to.equal(500);
    for (const r of requests) {
      const events = verifiedEvents(r);
      expect(events.length).to.be.at.most(50);
      // One webhook-id per batch, the same in X-Service-Delivery; the seed's hex signature covers the whole body too.
      expect(r.headers['webhook-id']).to.match(/^bat_[0-9a-f]{32}$/);
      expect(r.headers['x-service-delivery']).to.equal(r.headers['webhook-id']);
      expect(r.headers['x-service-event']).to.equal('BATCH');
      // Each event exactly as it is delivered alone.
      expect(events[0]).to.include.keys(
        'id',
        'timestamp',
        'project_id',
        'environment',
        'table',
        'event',
        'record',
        'data',
        'changed_fields',
      );
      expect(events[0]!.event).to.equal('INSERT');
    }
    expect(new Set(requests.map((r) => r.headers['webhook-id'])).size, 'a webhook-id per batch').to.equal(requests.length);
    // History: one delivered row per event, each naming its batch (the webhook-id it went under).
    const rows = await eventually(
      () => p.delivery(wh),
      (r) => r.length === 500 && r.every((d) => d.status === 'delivered'),
    );
    const ids = new Set(requests.map((r) => r.headers['webhook-id']));
    expect(rows.every((d) => ids.has(d.batch_id))).to.equal(true);
  });

  it('a failing batch is retried whole: the same webhook-id, the same events, the same bytes, until a 2xx delivers them all', async () => {
    p.receiver.behave = (_r, i) => (i < 2 ? { status: 500 } : { status: 200 });
    const wh = await p.subscribe({ secret: SECRET, batch: { maxEvents: 10, maxWaitMs: 2000 } });
    await p.writer.query(`INSERT INTO shop_master.orders SELECT g, 'new', g FROM generate_series(1, 10) g`);
    const rows = await eventually(
      () => p.delivery(wh),
      (r) => r.length === 10 && r.every((d) => d.status === 'delivered'),
      20_000,
    );
    const requests = p.receiver.requests;
    expect(requests).to.have.length(3);
    const [first] = requests;
    for (const r of requests) {
      expect(r.headers['webhook-id']).to.equal(first!.headers['webhook-id']);
      expect(r.body, 'the same bytes on every attempt').to.equal(first!.body);
      expect(verifiedEvents(r).map((e) => e.record.id)).to.deep.equal([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    }
    for (const d of rows) {
      expect(d).to.include({ status: 'delivered', attempts: 3, batch_id: first!.headers['webhook-id'] });
      expect(d.attempt_log.map((a: any) => a.http_status)).to.deep.equal([500, 500, 200]);
    }
  });

  it("the retry queue sends a batched subscription's deliveries that were never batched in new batches, each retried whole", async () => {
    // Parked one by one before batching was turned on: answered 503, next attempt after Retry-After.
    p.receiver.behave = () => ({ status: 503, headers: { 'retry-after': '2' } });
    const wh = await p.subscribe({ secret: SECRET });
    await p.writer.query(`INSERT INTO shop_master.orders SELECT g, 'new', g FROM generate_series(1, 100) g`);
    await eventually(
      () => p.delivery(wh),
      (r) => r.length === 100 && r.every((d) => d.status === 'retrying'),
    );
    await p.t.ctx.pool.query('UPDATE walgate.webhooks SET batch_max_events = 25 WHERE id = $1', [wh]);
    p.receiver.requests.length = 0;
    // Each batch fails once, then is acknowledged.
    const tried = new Set<string>();
    p.receiver.behave = (r) => {
      const first = !tried.has(r.headers['webhook-id']!);
      tried.add(r.headers['webhook-id']!);
      return first ? { status: 500 } : { status: 200 };
    };
    const rows = await eventually(
      () => p.delivery(wh),
      (r) => r.every((d) => d.status === 'delivered'),
      20_000,
    );
    const byId = new Map<string, string[]>();
    for (const r of p.receiver.requests) {
      const ids = verifiedEvents(r).map((e) => e.id as string);
      expect(ids.length).to.be.at.most(25);
      const before = byId.get(r.headers['webhook-id']!);
      if (before) expect(ids, 'a retried batch carries the same events').to.deep.equal(before);
      byId.set(r.headers['webhook-id']!, ids);
    }
    expect(p.receiver.requests.length, 'each batch twice').to.equal(2 * byId.size);
    expect(byId.size, 'batched, not one by one').to.be.below(50);
    expect(new Set([...byId.values()].flat()).size).to.equal(100);
    for (const d of rows) {
      expect(byId.get(d.batch_id)).to.include(d.event_id);
      expect(d.attempts).to.equal(3);
    }
  });

  it("row ordering: a row's changes arrive in commit order inside and across batches, through failures and retries", async () => {
    await p.writer.query('CREATE TABLE IF NOT EXISTS shop_master.items (id int PRIMARY KEY, version int NOT NULL)');
    await p.writer.query('TRUNCATE shop_master.items');
    // Every third request fails for a while: batches are parked, their rows' later changes parked behind them.
    p.receiver.behave = (_r, i) => (i < 30 && i % 3 === 1 ? { status: 503 } : { status: 200 });
    const wh = await p.subscribe({
      secret: SECRET,
      table: 'items',
      ordering: 'row',
      events: ['INSERT', 'UPDATE'],
      batch: { maxEvents: 8, maxWaitMs: 20 },
    });
    await p.writer.query('INSERT INTO shop_master.items SELECT g, 1 FROM generate_series(1, 20) g');
    for (let v = 2; v <= 6; v++) await p.writer.query('UPDATE shop_master.items SET version = $1', [v]);
    const rows = await eventually(
      () => p.delivery(wh),
      (r) => r.length === 120 && r.every((d) => d.status === 'delivered'),
      30_000,
    );
    expect(
      rows.some((d) => d.attempts > 1 && d.batch_id !== null),
      'batches were retried',
    ).to.equal(true);
    // Replayed in arrival order: no change is sent before its row's previous change was acknowledged,
    // and inside a batch a row's changes follow each other in order.
    const acknowledged = new Map<number, number>();
    const failed = new Set<number>();
    p.receiver.requests.forEach((r, i) => (i < 30 && i % 3 === 1 ? failed.add(i) : undefined));
    let batchesWithOrderedRows = 0;
    for (const [i, r] of p.receiver.requests.entries()) {
      const local = new Map(acknowledged);
      const events = verifiedEvents(r);
      if (events.length > 1) batchesWithOrderedRows++;
      for (const e of events) {
        const row = e.record.id as number;
        const version = e.record.version as number;
        const last = local.get(row) ?? 0;
        expect(version, `row ${row} v${version} sent after v${last} was acknowledged (request ${i})`).to.be.at.most(last + 1);
        local.set(row, Math.max(last, version));
      }
      if (!failed.has(i)) for (const [row, v] of local) acknowledged.set(row, v);
    }
    for (let row = 1; row <= 20; row++) expect(acknowledged.get(row), `row ${row}`).to.equal(6);
    expect(batchesWithOrderedRows, 'batches carried several rows at once').to.be.greaterThan(0);
    expect(p.receiver.requests.length, 'batched: fewer requests than changes').to.be.below(120);
  });

  it("row ordering through the retry queue: a row's backlog goes a batch at a time, its changes in commit order inside the batch", async () => {
    await p.writer.query('CREATE TABLE IF NOT EXISTS shop_master.items (id int PRIMARY KEY, version int NOT NULL)');
    await p.writer.query('TRUNCATE shop_master.items');
    // The first batch fails twice: meanwhile each row's later changes are parked behind it.
    p.receiver.behave = (_r, i) => (i < 2 ? { status: 503 } : { status: 200 });
    const wh = await p.subscribe({
      secret: SECRET,
      table: 'items',
      ordering: 'row',
      events: ['INSERT', 'UPDATE'],
      batch: { maxEvents: 10 },
    });
    await p.writer.query('INSERT INTO shop_master.items SELECT g, 1 FROM generate_series(1, 3) g');
    for (let v = 2; v <= 6; v++) await p.writer.query('UPDATE shop_master.items SET version = $1', [v]);
    await eventually(
      () => p.delivery(wh),
      (r) => r.length === 18 && r.every((d) => d.status === 'delivered'),
      20_000,
    );
    const requests = p.receiver.requests.map((r) => verifiedEvents(r).map((e) => [e.record.id as number, e.record.version as number]));
    // The first batch (three rows' INSERTs) three times, then the rows' backlogs: five changes of each row, whole, in order.
    expect(requests.length, JSON.stringify(requests)).to.be.at.most(6);
    const after = requests.slice(3).flat();
    expect(after).to.have.length(15);
    for (let row = 1; row <= 3; row++) {
      expect(
        after.filter(([id]) => id === row).map(([, v]) => v),
        `row ${row}`,
      ).to.deep.equal([2, 3, 4, 5, 6]);
    }
    expect(
      requests.slice(3).some((events) => events.filter(([id]) => id === 1).length > 1),
      'a row moved several changes in one request',
    ).to.equal(true);
  });
});

describe('delivery: a batch past its park bound while in flight', function () {
  this.timeout(60_000);
  let p: Pipeline;
  before(async () => {
    // Parked 300 ms after it was read; the receiver takes 1.5 s to answer the first request.
    p = await startPipeline({ WEBHOOK_PARK_AFTER_MS: '300', WEBHOOK_TIMEOUT_MS: '3000', WEBHOOK_RETRY_DELAYS_MS: '0,100,200' });
  });
  after(() => p?.close());

  it('its members are parked together, the late answer is recorded on them, and the retry sends the same batch', async () => {
    p.receiver.behave = (_r, i) => (i === 0 ? { status: 503, after: sleep(1500) } : { status: 200 });
    const wh = await p.subscribe({ secret: SECRET, batch: { maxEvents: 5, maxWaitMs: 0 } });
    await p.writer.query(`INSERT INTO shop_master.orders SELECT g, 'new', g FROM generate_series(1, 5) g`);
    const rows = await eventually(
      () => p.delivery(wh),
      (r) => r.length === 5 && r.every((d) => d.status === 'delivered'),
      20_000,
    );
    const requests = p.receiver.requests;
    expect(requests).to.have.length(2);
    expect(requests[1]!.headers['webhook-id']).to.equal(requests[0]!.headers['webhook-id']);
    expect(requests[1]!.body).to.equal(requests[0]!.body);
    expect(verifiedEvents(requests[1]!)).to.have.length(5);
    for (const d of rows) {
      expect(d).to.include({ attempts: 2, batch_id: requests[0]!.headers['webhook-id'] });
      expect(d.attempt_log.map((a: any) => a.http_status)).to.deep.equal([503, 200]);
    }
  });
});

describe('delivery: the retry queue claims a batch whole', function () {
  this.timeout(60_000);
  let db: TestDatabase;
  let pool: pg.Pool;
  const claim = (perWebhook: number, limit = 1000) => {
    const now = new Date();
    return claimDue(pool as unknown as Pool, { now, leaseUntil: new Date(now.getTime() + 60_000), limit, perWebhook, inflight: new Map() });
  };
  before(async () => {
    db = await createTestDatabase();
    pool = new pg.Pool({ connectionString: db.url, max: 4 });
    await pool.query(`
      INSERT INTO walgate.projects (id) VALUES ('p');
      INSERT INTO walgate.environments (project_id, name, schema_name) VALUES ('p', 'e', 'p_e');
      INSERT INTO walgate.webhooks (id, project_id, environment, schema_name, table_name, events, url, secret, batch_max_events)
        VALUES ('wh_1', 'p', 'e', 'p_e', 't', '{UPDATE}', 'https://example.com', '\\x00', 10);`);
  });
  after(async () => {
    await pool?.end();
    await db?.drop();
  });
  beforeEach(() => pool.query('DELETE FROM walgate.deliveries'));

  /** `batches` batches of `size` retrying deliveries, due; ids del_<batch>_<member>. */
  const park = (batches: number, size: number) =>
    pool.query(
      `INSERT INTO walgate.deliveries (id, webhook_id, event_id, event_type, status, attempts, next_attempt_at, created_at, batch_id)
       SELECT format('del_%s_%s', lpad(b::text, 3, '0'), lpad(m::text, 3, '0')), 'wh_1', format('evt_%s_%s', lpad(b::text, 3, '0'), lpad(m::text, 3, '0')),
              'UPDATE', 'retrying', 1, now() - interval '2 s', now(), 'bat_' || b
         FROM generate_series(1, $1) b, generate_series(1, $2) m`,
      [batches, size],
    );

  it('a batch larger than the room is claimed whole, whichever member the claim meets first', async () => {
    await park(1, 10);
    // The lead (its first member) due a moment after the others: a claim with room for 3 meets only non-leads.
    await pool.query(`UPDATE walgate.deliveries SET next_attempt_at = now() - interval '1 s' WHERE id = 'del_001_001'`);
    const claimed = await claim(3);
    expect(claimed.map((c) => c.id).sort()).to.deep.equal(
      Array.from({ length: 10 }, (_, i) => `del_001_${String(i + 1).padStart(3, '0')}`),
    );
    expect(new Set(claimed.map((c) => c.batch_id))).to.deep.equal(new Set(['bat_1']));
    expect(await claim(3), 'leased: nothing left').to.deep.equal([]);
  });

  it('claims running at once never split a batch between them', async () => {
    await park(40, 5);
    const results = await Promise.all([claim(1000, 30), claim(1000, 30), claim(1000, 30)]);
    const owner = new Map<string, number>();
    const count = new Map<string, number>();
    results.forEach((claimed, worker) => {
      for (const c of claimed) {
        expect(owner.get(c.batch_id!) ?? worker, `${c.batch_id} claimed by two`).to.equal(worker);
        owner.set(c.batch_id!, worker);
        count.set(c.batch_id!, (count.get(c.batch_id!) ?? 0) + 1);
      }
    });
    expect(count.size).to.be.greaterThan(0);
    for (const [batch, n] of count) expect(n, batch).to.equal(5);
  });
});
