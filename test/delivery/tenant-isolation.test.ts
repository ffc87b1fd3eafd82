import { expect } from 'chai';
import { registerTailerGauges } from '../../src/ops/tailer-ops.js';
import { HttpClient } from '../support/http.js';
import { insertSubscription } from '../support/subscriptions.js';
import { eventually, startPipeline, startPipelineOps, type Pipeline } from './support.js';

// One tenant cannot hurt another through the delivery plane: its hanging endpoints hold their own
// share (connections, slots), its dead endpoint's deliveries end, and its secrets stay out of what
// operators and other tenants see.

function p95(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil(sorted.length * 0.95) - 1)]!;
}

describe('delivery: a noisy neighbour', function () {
  this.timeout(120_000);
  let p: Pipeline;
  before(async () => {
    // A time-out longer than the test: project A's requests stay stuck throughout.
    p = await startPipeline({ WEBHOOK_TIMEOUT_MS: '60000', WEBHOOK_PARK_AFTER_MS: '120000', WEBHOOK_RETRY_DELAYS_MS: '0,1000,5000' });
    await p.t.provision({ projectId: 'victim', name: 'master' });
    await p.writer.query('CREATE TABLE victim_master.orders (id int PRIMARY KEY, status text, amount numeric(12,2))');
  });
  after(() => p?.close());

  it('project A: 10 hanging endpoints (half on B’s origin) and 3,000 stuck deliveries; project B: commit → receipt p95 ≤ 1 s, none failed, B’s breaker untouched', async () => {
    const hangingA = await p.newReceiver();
    hangingA.behave = () => ({ hang: true });
    const b = p.receiver; // B's receiver: A's /stuck paths on it hang, B's /b answers at once
    b.behave = (req) => (req.path.startsWith('/stuck') ? { hang: true } : { status: 200 });
    for (let i = 0; i < 10; i++) await p.subscribe({ url: i % 2 ? `${hangingA.url}/stuck-${i}` : `${b.url}/stuck-${i}` });
    const victim = await insertSubscription(p.t.ctx, {
      projectId: 'victim',
      environment: 'master',
      schema: 'victim_master',
      table: 'orders',
      url: `${b.url}/b`,
    });
    // A's 3,000 deliveries: every endpoint takes all the connections it may have, and keeps them.
    await p.writer.query(`INSERT INTO shop_master.orders SELECT g, 'new', 1 FROM generate_series(1, 300) g`);
    const stuckOnB = () => b.requests.filter((r) => r.path.startsWith('/stuck')).length;
    await eventually(
      async () => [hangingA.requests.length, stuckOnB()],
      ([a, onB]) => a! > 0 && onB! > 0,
      30_000,
    );
    await new Promise((r) => setTimeout(r, 1000)); // the rest of what A may send piles up
    // B commits one change at a time; commit → receipt measured from before each commit.
    const latencies: number[] = [];
    for (let i = 1; i <= 40; i++) {
      const before = Date.now();
      await p.writer.query(`INSERT INTO victim_master.orders VALUES ($1, 'new', 1)`, [i]);
      const got = await eventually(
        async () => b.requests.find((r) => r.path === '/b' && JSON.parse(r.body).record.id === i) ?? null,
        (r) => r !== null,
        30_000,
      );
      latencies.push(got!.at - before);
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(p95(latencies), latencies.join(' ')).to.be.at.most(1000);
    const stuck = hangingA.requests.length + stuckOnB();
    expect(stuck, 'A’s endpoints held all their connections throughout').to.be.at.least(10 * p.t.ctx.config.webhooks.endpointConcurrency);
    const deliveries = await eventually(
      () => p.delivery(victim),
      (r) => r.length === 40 && r.every((d) => d.status === 'delivered'),
    );
    expect(deliveries.every((d) => d.attempts === 1)).to.equal(true);
    const { rows } = await p.t.ctx.pool.query(`SELECT consecutive_failures FROM walgate.endpoint_breakers WHERE project_id = 'victim'`);
    expect(rows.every((r) => r.consecutive_failures === 0)).to.equal(true);
  });
});

describe('delivery: a dead endpoint’s deliveries end', function () {
  this.timeout(60_000);
  let p: Pipeline;
  const DELAYS = [0, 300, 300, 300, 300];
  const COOLDOWN = 1500;
  before(async () => {
    p = await startPipeline({
      WEBHOOK_RETRY_DELAYS_MS: DELAYS.join(','),
      WEBHOOK_BREAKER_FAILURES: '3',
      WEBHOOK_BREAKER_COOLDOWN_MS: String(COOLDOWN),
    });
  });
  after(() => p?.close());

  it('an always-failing endpoint with 30 changes: all dead within the schedule and two cool-downs, waits logged (no attempt spent), nothing sent while open; a replay brings them back', async () => {
    p.receiver.behave = () => ({ status: 500 });
    registerTailerGauges(p.t.ctx, p.tailer, p.worker);
    const metrics = () => p.t.ctx.metrics.registry.metrics();
    const wh = await p.subscribe();
    const started = Date.now();
    await p.writer.query(`INSERT INTO shop_master.orders SELECT g, 'new', 1 FROM generate_series(1, 30) g`);
    // While they retry, the subscription's backlog is a series of its own (by id, no URL).
    await eventually(metrics, (m) => new RegExp(`walgate_subscription_backlog\\{subscription="${wh}"\\} [1-9]`).test(m));
    // The schedule (each delay + 20 %), two cool-downs, and slack for a loaded machine.
    const bound = DELAYS.reduce((a, d) => a + d * 1.2, 0) + 2 * COOLDOWN;
    const dead = await eventually(
      () => p.delivery(wh),
      (r) => r.length === 30 && r.every((d) => d.status === 'dead'),
      bound + 10_000,
    );
    const took = Date.now() - started;
    expect(took).to.be.below(bound + 10_000);
    expect(await metrics(), 'no backlog left, no series').to.not.contain(`subscription="${wh}"`);
    const log = dead.flatMap((d) => d.attempt_log as Array<Record<string, any>>);
    // Dead at the last attempt of the schedule, or — held by the breaker — past the bound, with
    // fewer attempts spent: the breaker pauses, it does not spend them.
    for (const d of dead) {
      const requests = (d.attempt_log as Array<Record<string, any>>).filter((a) => a.kind === 'request').length;
      expect(d.attempts).to.equal(requests);
      if (d.attempts < DELAYS.length) expect(d.last_error).to.equal('breaker open');
      else expect(d.attempts).to.equal(DELAYS.length);
    }
    const waits = log.filter((a) => a.kind === 'wait');
    expect(waits.length, 'waits logged').to.be.at.least(1);
    expect(waits.every((a) => a.http_status === null && a.duration_ms === 0 && a.error === 'breaker open')).to.equal(true);
    // One request per attempt made, none for a wait.
    expect(p.receiver.requests).to.have.length(log.length - waits.length);
    // And none while open: once a delivery has waited the breaker was open, and every request
    // started after that was a probe — one per cool-down.
    const { rows } = await p.t.ctx.pool.query('SELECT opened_until FROM walgate.endpoint_breakers');
    const firstSkip = Math.min(...waits.map((a) => Date.parse(a.started_at)));
    const probes = log
      .filter((a) => a.kind === 'request')
      .map((a) => Date.parse(a.started_at))
      .filter((at) => at > firstSkip)
      .sort((a, b) => a - b);
    for (let i = 1; i < probes.length; i++) expect(probes[i]! - probes[i - 1]!, probes.join(' ')).to.be.at.least(COOLDOWN - 100);
    expect(rows[0].opened_until).to.not.equal(null);
    // Counted as dead letters, and a replay brings them back once the endpoint answers again.
    p.receiver.behave = () => ({ status: 200 });
    await eventually(
      () => p.t.ctx.pool.query('SELECT opened_until FROM walgate.endpoint_breakers'),
      (r) => r.rows[0].opened_until.getTime() < Date.now(),
      COOLDOWN * 3,
    );
    const api = new HttpClient(p.t.url, {
      authorization: `Bearer ${await p.t.managementToken('shop')}`,
      'x-project-id': 'shop',
      environment: 'master',
    });
    const replay = await api.post(`/api/rest/_webhooks/${wh}/replay`, {});
    expect(replay.status).to.equal(202);
    expect(replay.body.replayed).to.equal(30);
    await eventually(
      () => p.delivery(wh),
      (r) => r.every((d) => d.status === 'delivered'),
      20_000,
    );
  });
});

describe('delivery: secrets in URLs stay secret', function () {
  this.timeout(60_000);
  let p: Pipeline;
  let ops: HttpClient;
  let close: () => Promise<void>;
  before(async () => {
    p = await startPipeline({ WEBHOOK_RETRY_DELAYS_MS: '0,100,100', WEBHOOK_BREAKER_FAILURES: '2', WEBHOOK_BREAKER_COOLDOWN_MS: '60000' });
    ({ ops, close } = await startPipelineOps(p));
  });
  after(async () => {
    await close?.();
    await p?.close();
  });

  it('a URL with a secret path and query: after its breaker opens, the secret is in no log line, no /metrics text (api and tailer), no lastError', async () => {
    p.receiver.behave = () => ({ status: 500 });
    const wh = await p.subscribe({ url: `${p.receiver.url}/hooks/PathSecret123?token=QuerySecret456` });
    await p.writer.query(`INSERT INTO shop_master.orders SELECT g, 'new', 1 FROM generate_series(1, 4) g`);
    await eventually(
      async () => p.t.logs.text,
      (t) => t.includes('circuit breaker opened'),
    );
    // Each failed or waits on the open breaker (60 s): no request is out any more.
    const deliveries = await eventually(
      () => p.delivery(wh),
      (r) => r.length === 4 && r.every((d) => d.status === 'dead' || d.last_error === 'breaker open'),
      20_000,
    );
    const opened = p.t.logs.lines.find((l) => l.includes('circuit breaker opened'))!;
    expect(JSON.parse(opened)).to.include({ origin: new URL(p.receiver.url).origin, project: 'shop' });
    const api = new HttpClient(p.t.url, {
      authorization: `Bearer ${await p.t.managementToken('shop')}`,
      'x-project-id': 'shop',
      environment: 'master',
    });
    const seen = [
      p.t.logs.text,
      (await ops.get('/metrics')).text,
      (await new HttpClient(p.t.url).get('/metrics')).text,
      JSON.stringify(deliveries.map((d) => [d.last_error, d.attempt_log])),
      JSON.stringify((await api.get(`/api/rest/_webhooks/${wh}/deliveries`)).body),
    ];
    expect((await ops.get('/metrics')).text).to.contain('walgate_breaker_open{state="open"} 1');
    for (const text of seen) {
      expect(text).to.not.contain('PathSecret123');
      expect(text).to.not.contain('QuerySecret456');
    }
  });
});
