import { expect } from 'chai';
import { freePort } from '../../src/core/db/embedded.js';
import { startAuthApi } from '../auth/support.js';
import { eventually, startPipeline, startPipelineOps, type Pipeline } from '../delivery/support.js';
import type { TestApi } from '../support/api.js';
import { HttpClient } from '../support/http.js';

describe('operations: api health, readiness and metrics', function () {
  this.timeout(30_000);
  let t: TestApi;
  before(async () => {
    t = await startAuthApi();
  });
  after(() => t.close());

  it('/healthz answers, /readyz checks Postgres and migrations', async () => {
    const http = new HttpClient(t.url);
    expect((await http.get('/healthz')).body).to.deep.equal({ status: 'ok' });
    const ready = await http.get('/readyz');
    expect(ready.status).to.equal(200);
    expect(ready.body).to.deep.equal({ status: 'ready', checks: [{ name: 'postgres', state: 'ok', ok: true }] });
  });

  it('/metrics: request durations by route pattern and status, auth outcomes, event-loop delay', async () => {
    const { http } = await t.provision({ projectId: 'shop', name: 'master' });
    await http.post('/auth/login', { email: 'nobody@example.com', password: 'whatever it is here' });
    await http.get('/auth/me');
    const metrics = (await new HttpClient(t.url).get('/metrics')).text;
    expect(metrics).to.match(/walgate_http_request_duration_seconds_count\{method="POST",route="\/auth\/login",status="401"\} 1/);
    expect(metrics).to.match(/walgate_http_request_duration_seconds_count\{method="GET",route="\/auth\/me",status="401"\} 1/);
    expect(metrics).to.match(/walgate_auth_events_total\{event="login_failed"\} 1/);
    expect(metrics).to.contain('nodejs_eventloop_lag_p99_seconds');
  });
});

describe('operations: readiness fails when Redis is away', function () {
  this.timeout(30_000);
  it('/readyz is 503 naming redis as failed; the driver error text is in the log only', async () => {
    const port = await freePort();
    const t = await startAuthApi({ redisUrl: `redis://127.0.0.1:${port}` });
    try {
      const ready = await new HttpClient(t.url).get('/readyz');
      expect(ready.status).to.equal(503);
      expect(ready.body.checks).to.deep.include({ name: 'redis', state: 'failed', ok: false });
      expect(ready.text).to.not.contain(String(port));
      expect(t.logs.text).to.match(/readiness check failed/);
      expect(t.logs.lines.find((l) => l.includes('readiness check failed'))).to.match(/"check":"redis"/);
    } finally {
      await t.close();
    }
  });
});

describe('operations: the tailer listener', function () {
  this.timeout(30_000);
  let p: Pipeline;
  let ops: HttpClient;
  let close: () => Promise<void>;
  before(async () => {
    p = await startPipeline();
    ({ ops, close } = await startPipelineOps(p));
  });
  after(async () => {
    await close?.();
    await p?.close();
  });

  it('/readyz says leader, with the slot and its lag', async () => {
    const ready = await ops.get('/readyz');
    expect(ready.status).to.equal(200);
    const tailer = ready.body.checks.find((c: { name: string }) => c.name === 'tailer');
    expect(tailer.detail.role).to.equal('leader');
    expect(tailer.detail.slot).to.match(/^walgate_/);
    expect(tailer.detail.lagBytes).to.be.a('number');
    expect((await ops.get('/healthz')).body).to.deep.equal({ status: 'ok' });
    expect((await ops.get('/nope')).status).to.equal(404);
  });

  it('/metrics: events, deliveries, latency, queue depth, lag, leadership, breakers', async () => {
    await p.subscribe();
    await p.writer.query(`INSERT INTO shop_master.orders VALUES (1, 'new', 1)`);
    await p.receiver.waitFor(1);
    const text = await eventually(
      async () => (await ops.get('/metrics')).text,
      (m) => /walgate_deliveries_total\{status="delivered"\} 1/.test(m),
    );
    expect(text).to.match(/walgate_events_total\{operation="INSERT"\} 1/);
    expect(text).to.match(/walgate_delivery_latency_seconds_count 1/);
    expect(text).to.match(/walgate_delivery_attempt_duration_seconds_count\{outcome="success"\} 1/);
    expect(text).to.match(/walgate_deliveries_queued\{status="pending"\} 0/);
    expect(text).to.match(/walgate_deliveries_queued\{status="dead"\} 0/);
    expect(text).to.match(/walgate_replication_lag_bytes \d+/);
    expect(text).to.match(/walgate_replication_retained_warning 0/);
    expect(text).to.match(/walgate_replication_slot_status\{wal_status="reserved"\} 1/);
    expect(text).to.match(/walgate_tailer_leading 1/);
    // Open breakers are counted by state, with no URL label (a path may hold a receiver's secret).
    p.receiver.behave = (req) => ({ status: req.path === '/failing' ? 500 : 200 });
    await p.subscribe({ url: `${p.receiver.url}/failing` });
    await p.writer.query(`INSERT INTO shop_master.orders VALUES (2, 'new', 1)`);
    const opened = await eventually(
      async () => (await ops.get('/metrics')).text,
      (m) => m.includes('walgate_breaker_open{state="open"} 1'),
    );
    expect(opened).to.not.contain('/failing');
  });
});
