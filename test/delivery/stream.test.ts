import { setTimeout as sleep } from 'node:timers/promises';
import { expect } from 'chai';
import pg from 'pg';
import type { DeliveryEngine } from '../../src/delivery/engine.js';
import type { WalTailer } from '../../src/tailer/tailer.js';
import { insertSubscription } from '../support/subscriptions.js';
import { startTailer, waitForLeader } from '../tailer/support.js';
import { eventually, startPipeline, testWorker, type Pipeline } from './support.js';

async function slotPassed(p: Pipeline, lsn: string): Promise<boolean> {
  const { rows } = await p.t.ctx.pool.query(
    `SELECT coalesce(confirmed_flush_lsn >= $2::pg_lsn, false) AS ok FROM pg_replication_slots WHERE slot_name = $1`,
    [p.tailer.status().slotName, lsn],
  );
  return rows[0]?.ok === true;
}

async function walPosition(p: Pipeline): Promise<string> {
  return (await p.t.ctx.pool.query('SELECT pg_current_wal_insert_lsn()::text AS l')).rows[0].l;
}

describe('delivery: the stream (WAL → receiver, the WAL as the queue)', function () {
  this.timeout(90_000);
  let p: Pipeline;
  before(async () => {
    p = await startPipeline({ WEBHOOK_RETRY_DELAYS_MS: '0,40,80,120,160', WEBHOOK_TIMEOUT_MS: '10000', WEBHOOK_BREAKER_FAILURES: '1000' });
  });
  after(() => p?.close());
  beforeEach(async () => {
    await p.removeSubscriptions();
    await p.writer.query('TRUNCATE shop_master.orders');
    p.receiver.requests.length = 0;
    p.receiver.behave = () => ({ status: 200 });
  });

  it('a change delivered on its first attempt leaves one row: its delivery, with the attempt folded in', async () => {
    const wh = await p.subscribe();
    const eventsBefore = (await p.t.ctx.pool.query('SELECT count(*)::int AS n FROM walgate.events')).rows[0].n;
    await p.writer.query(`INSERT INTO shop_master.orders SELECT g, 'new', g FROM generate_series(1, 200) g`);
    await p.receiver.waitFor(200, 60_000);
    const rows = await eventually(
      () => p.delivery(wh),
      (r) => r.length === 200,
    );
    for (const d of rows) {
      expect(d).to.include({ status: 'delivered', attempts: 1, http_status: 200, last_error: null });
      expect(d.first_attempt_started_at).to.be.instanceOf(Date);
      expect(d.first_attempt_duration_ms).to.be.a('number');
      expect(d.attempt_log, 'no attempt row on the happy path').to.equal(null);
    }
    const eventsAfter = (await p.t.ctx.pool.query('SELECT count(*)::int AS n FROM walgate.events')).rows[0].n;
    expect(eventsAfter - eventsBefore, 'no event row on the happy path').to.equal(0);
    // …and the slot moves past them.
    const end = await walPosition(p);
    await eventually(
      () => slotPassed(p, end),
      (ok) => ok,
      5000,
    );
  });

  it('a paused subscription: what it took before the pause waits in the retry queue and goes out on resume', async () => {
    p.receiver.behave = () => ({ status: 503 });
    const wh = await p.subscribe();
    await p.writer.query(`INSERT INTO shop_master.orders SELECT g, 'new', g FROM generate_series(1, 10) g`);
    await p.t.ctx.pool.query('UPDATE walgate.webhooks SET active = false WHERE id = $1', [wh]);
    await p.writer.query(`INSERT INTO shop_master.orders VALUES (11, 'while paused', 11)`);
    await eventually(
      () => p.delivery(wh),
      (r) => r.length === 10,
      20_000,
    );
    const sent = p.receiver.requests.length;
    await sleep(500);
    expect(p.receiver.requests.length, 'nothing is sent while paused').to.equal(sent);
    p.receiver.behave = () => ({ status: 200 });
    await p.t.ctx.pool.query('UPDATE walgate.webhooks SET active = true WHERE id = $1', [wh]);
    const rows = await eventually(
      () => p.delivery(wh),
      (r) => r.length === 10 && r.every((d) => d.status === 'delivered'),
      30_000,
    );
    expect(rows).to.have.length(10); // nothing for the change committed while paused
  });
});

describe('delivery: a hanging subscriber holds the slot no longer than the bound', function () {
  this.timeout(120_000);
  let p: Pipeline;
  before(async () => {
    p = await startPipeline({
      WEBHOOK_RETRY_DELAYS_MS: '0,40,80,120,160',
      WEBHOOK_TIMEOUT_MS: '15000',
      WEBHOOK_PARK_AFTER_MS: '1000',
      WEBHOOK_BREAKER_FAILURES: '1000',
    });
  });
  after(() => p?.close());

  it('a hanging subscriber: the slot passes its changes within the bound; they are parked, and delivered once it answers', async () => {
    p.receiver.behave = () => ({ hang: true });
    const wh = await p.subscribe();
    await p.writer.query(`INSERT INTO shop_master.orders SELECT g, 'new', g FROM generate_series(1, 100) g`);
    const end = await walPosition(p);
    const started = Date.now();
    // The bound is 1 s (WEBHOOK_PARK_AFTER_MS); the requests hang for 15 s (the time-out).
    await eventually(
      () => slotPassed(p, end),
      (ok) => ok,
      12_000,
    );
    const heldFor = Date.now() - started;
    expect(heldFor, 'the slot moved on long before the hanging requests timed out').to.be.below(12_000);
    const parked = await p.delivery(wh);
    expect(parked).to.have.length(100);
    expect(parked.every((d) => d.status === 'pending' || d.status === 'retrying')).to.equal(true);
    p.receiver.behave = () => ({ status: 200 });
    const delivered = await eventually(
      () => p.delivery(wh),
      (r) => r.length === 100 && r.every((d) => d.status === 'delivered'),
      60_000,
    );
    expect(delivered).to.have.length(100);
    // Every change reached the receiver with a 2xx under its one id.
    const ids = new Set(p.receiver.requests.map((r) => r.headers['x-service-delivery']));
    expect(ids.size).to.equal(100);
  });
});

describe('delivery: an answer that comes after its delivery was parked, before the park is written', function () {
  this.timeout(60_000);
  let p: Pipeline;
  let locker: pg.Client | undefined;
  before(async () => {
    p = await startPipeline({ WEBHOOK_TIMEOUT_MS: '2000', WEBHOOK_PARK_AFTER_MS: '500', WEBHOOK_BREAKER_FAILURES: '1000' });
  });
  after(async () => {
    await locker?.end().catch(() => undefined);
    await p?.close();
  });

  it('is recorded once the park commits: delivered, and not sent again when the lease runs out', async () => {
    let answer!: () => void;
    const answered = new Promise<void>((r) => (answer = r));
    p.receiver.behave = () => ({ status: 200, after: answered });
    const wh = await p.subscribe();
    locker = new pg.Client({ connectionString: p.t.database.url });
    await locker.connect();
    await p.writer.query(`INSERT INTO shop_master.orders VALUES (1, 'new', 1)`);
    await p.receiver.waitFor(1);
    // The park (after 500 ms in flight) cannot be written yet: its event insert waits for this lock.
    await locker.query('BEGIN');
    await locker.query('LOCK TABLE walgate.events IN EXCLUSIVE MODE');
    await sleep(1000); // parked by now, its write waiting
    answer(); // the receiver answers 2xx meanwhile
    await sleep(500);
    await locker.query('COMMIT');
    const [d] = await eventually(
      () => p.delivery(wh),
      (r) => r[0]?.status === 'delivered',
      10_000,
    );
    expect(d).to.include({ attempts: 1, http_status: 200 });
    // Its lease (time-out + 5 s) runs out: nothing is sent again.
    await sleep(8000);
    expect(p.receiver.requests, 'requests').to.have.length(1);
  });
});

describe('delivery: a standby that takes over in the middle of a batch misses nothing', function () {
  this.timeout(180_000);
  let p: Pipeline;
  let standby: WalTailer | undefined;
  let standbyEngine: DeliveryEngine | undefined;
  let locker: pg.Client | undefined;
  before(async () => {
    p = await startPipeline({ WEBHOOK_RETRY_DELAYS_MS: '0,40,80,120,160', WEBHOOK_TIMEOUT_MS: '10000' });
  });
  after(async () => {
    await locker?.end().catch(() => undefined);
    await standby?.stop();
    await standbyEngine?.stop(1000);
    await p?.close();
  });

  it('the leader loses its connection while its history write and a new subscription wait: the standby delivers every change to both', async () => {
    standbyEngine = await testWorker(p.t.ctx);
    standbyEngine.start();
    standby = startTailer(p.t.ctx, p.t.database.url, { sink: standbyEngine });
    await eventually(
      async () => standby!.status().role,
      (r) => r === 'standby',
    );
    const sub = (path: string) =>
      insertSubscription(p.t.ctx, {
        projectId: 'shop',
        environment: 'master',
        schema: 'shop_master',
        table: 'orders',
        events: ['INSERT'],
        url: `${p.receiver.url}${path}`,
      });
    const first = await sub('/first');
    await p.writer.query(`INSERT INTO shop_master.orders VALUES (0, 'warm-up', 0)`);
    await eventually(
      () => p.delivery(first),
      (r) => r.length === 1,
    );
    const start = await walPosition(p);

    // The fault: the leader's fenced writes stall behind the subscription view it must save (only
    // the leading tailer writes walgate.tailer_subscriptions): what it sends from then on is
    // neither recorded nor acknowledged.
    locker = new pg.Client({ connectionString: p.t.database.url });
    await locker.connect();
    await p.writer.query(`INSERT INTO shop_master.orders SELECT g, 'before', g FROM generate_series(1, 20) g`);
    await locker.query('BEGIN');
    await locker.query('LOCK TABLE walgate.tailer_subscriptions IN ACCESS EXCLUSIVE MODE');
    const second = await sub('/second'); // created in the middle of the leader's batch
    const created = await walPosition(p);
    await p.writer.query(`INSERT INTO shop_master.orders SELECT g, 'after', g FROM generate_series(21, 40) g`);
    await p.receiver.waitFor(1 + 20 + 40, 120_000); // the leader sent them all…
    await sleep(300);
    expect(await slotPassed(p, created), '…but did not acknowledge past the new subscription').to.equal(false);

    // The leader's connection dies mid-write: its transaction is aborted, the standby takes over.
    const { rows } = await p.t.ctx.pool.query(
      `SELECT pg_terminate_backend(l.pid) AS ok FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
        WHERE l.locktype = 'advisory' AND l.granted AND a.application_name = 'walgate-tailer-lock'`,
    );
    expect(rows).to.have.length(1);
    await locker.query('ROLLBACK');
    await waitForLeader(standby);

    const firstRows = await eventually(
      () => p.delivery(first),
      (r) => r.length === 41 && r.every((d) => d.status === 'delivered'),
      60_000,
    );
    const secondRows = await eventually(
      () => p.delivery(second),
      (r) => r.length === 20 && r.every((d) => d.status === 'delivered'),
      60_000,
    );
    expect(firstRows).to.have.length(41);
    // The new subscription has exactly the changes committed after it, none before.
    const ids = (path: string) =>
      new Set(p.receiver.requests.filter((r) => r.path === path).map((r) => JSON.parse(r.body).record.id as number));
    expect([...ids('/second')].sort((a, b) => a - b)).to.deep.equal(Array.from({ length: 20 }, (_, i) => 21 + i));
    expect(ids('/first').size).to.equal(41);
    expect(secondRows).to.have.length(20);
    await eventually(
      () => slotPassed(p, start),
      (ok) => ok,
      10_000,
    );
  });
});
