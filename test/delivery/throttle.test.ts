import { expect } from 'chai';
import { managementClient } from '../support/api.js';
import type { HttpClient } from '../support/http.js';
import type { ReceivedRequest } from '../support/receiver.js';
import { eventually, startPipeline, type Pipeline } from './support.js';

// A throttle per subscription (`rateLimit: {perSecond, burst}`): its receiver never gets more than
// it can take, every change still arrives, and another subscription on the same table — another
// receiver's — goes at its own pace, as if the throttled one were not there.

const ROWS = 500;

/** The most requests inside any one second. */
function busiestSecond(requests: ReceivedRequest[]): number {
  const at = requests.map((r) => r.at).sort((a, b) => a - b);
  let most = 0;
  for (let i = 0, j = 0; i < at.length; i++) {
    while (at[i]! - at[j]! >= 1000) j++;
    most = Math.max(most, i - j + 1);
  }
  return most;
}

function p95(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * 0.95))]!;
}

describe('delivery: a throttle per subscription', function () {
  this.timeout(120_000);
  let p: Pipeline;
  let api: HttpClient;
  const create = (path: string, extra: Record<string, unknown> = {}) =>
    api.post('/api/rest/_webhooks', {
      projectId: 'shop',
      environment: 'master',
      table: 'orders',
      events: ['INSERT'],
      url: `${p.receiver.url}${path}`,
      secret: 'whsec-throttle-test-0123456789',
      ...extra,
    });
  const at = (path: string) => p.receiver.requests.filter((r) => r.path === path);

  /** Inserts ROWS rows from `from` on, 25 per statement every 50 ms; the commit time of each row id. */
  async function write(from: number): Promise<Map<number, number>> {
    const committed = new Map<number, number>();
    for (let i = 0; i < ROWS; i += 25) {
      await p.writer.query(`INSERT INTO shop_master.orders SELECT g, 'new', 1 FROM generate_series($1::int, $2::int) g`, [
        from + i,
        from + i + 24,
      ]);
      const now = Date.now();
      for (let id = from + i; id < from + i + 25; id++) committed.set(id, now);
      await new Promise((r) => setTimeout(r, 50));
    }
    return committed;
  }
  /** Commit → receipt of each row at `path`, once all ROWS arrived. */
  async function latencies(path: string, committed: Map<number, number>): Promise<number[]> {
    await eventually(
      async () => new Set(at(path).map((r) => JSON.parse(r.body).record.id as number)).size,
      (n) => n === ROWS,
      60_000,
    );
    const first = new Map<number, number>();
    for (const r of at(path)) {
      const id = JSON.parse(r.body).record.id as number;
      if (committed.has(id) && !first.has(id)) first.set(id, r.at);
    }
    return [...first].map(([id, t]) => t - committed.get(id)!);
  }

  before(async () => {
    p = await startPipeline();
    api = await managementClient(p.t, 'shop');
  });
  after(() => p?.close());

  it('perSecond 20 with 500 changes: no second above 22 requests, all 500 delivered; the other subscription keeps its pace', async () => {
    const fast = await create('/fast');
    expect(fast.status, JSON.stringify(fast.body)).to.equal(201);
    const alone = p95(await latencies('/fast', await write(1)));

    const slow = await create('/slow', { rateLimit: { perSecond: 20 } });
    expect(slow.status, JSON.stringify(slow.body)).to.equal(201);
    expect(slow.body.webhook.rateLimit).to.deep.equal({ perSecond: 20, burst: 1 });
    p.receiver.requests.length = 0;
    const committed = await write(1001);
    const beside = p95(await latencies('/fast', committed));
    // Same machine, same run: a throttled neighbour costs the other subscription nothing it would notice.
    expect(beside, `p95 ${beside} ms beside the throttled one, ${alone} ms alone`).to.be.at.most(Math.max(2 * alone, alone + 100));

    const throttled = await eventually(
      async () => at('/slow'),
      (r) => new Set(r.map((q) => JSON.parse(q.body).record.id)).size === ROWS,
      60_000,
    );
    expect(busiestSecond(throttled), 'requests in the busiest second').to.be.at.most(22);
    // About 25 s for 500 at 20 a second: it was spread, not sent as fast as it came.
    const spanMs = Math.max(...throttled.map((r) => r.at)) - Math.min(...throttled.map((r) => r.at));
    expect(spanMs).to.be.at.least(20_000);
    // Waiting for a turn is not an attempt: every delivery went at its first request.
    const rows = await eventually(
      () => p.delivery(slow.body.webhook.id),
      (r) => r.filter((d) => d.status === 'delivered').length === ROWS,
      10_000,
    );
    expect(
      rows.filter((d) => d.attempts !== 1).map((d) => ({ status: d.status, attempts: d.attempts, log: d.attempt_log })),
      'deliveries that took more than one request',
    ).to.deep.equal([]);
    expect(
      Number(
        await p.t.ctx.metrics.registry
          .getSingleMetric('walgate_delivery_throttle_waits_total')
          ?.get()
          .then((m) => m.values[0]?.value),
      ),
    ).to.be.above(0);

    // The waits show in the subscription's health (the leader adds them to the rollup every 5 s);
    // the unthrottled neighbour never waited.
    const health = await eventually(
      async () => (await api.get(`/api/rest/_webhooks/${slow.body.webhook.id}`)).body.health,
      (h) => h.throttledLastHour >= ROWS / 2,
      15_000,
    );
    expect(health.throttledLastHour, 'requests that waited').to.be.at.most(ROWS);
    // 500 turns at 20 a second: the requests waited, in all, at least ~20 s (one turn each apart).
    expect(health.throttledMsLastHour).to.be.at.least(15_000);
    const fastHealth = (await api.get(`/api/rest/_webhooks/${fast.body.webhook.id}`)).body.health;
    expect(fastHealth).to.include({ throttledLastHour: 0, throttledMsLastHour: 0 });
    const minutes = (await api.get(`/api/rest/_webhooks/${slow.body.webhook.id}/minutes`)).body.minutes;
    const perMinute = minutes.reduce((n: number, m: { throttled: number }) => n + m.throttled, 0);
    const windows = (await api.get(`/api/rest/_webhooks/${slow.body.webhook.id}/health`)).body.windows;
    expect(windows[0]).to.include({ window: '24h' });
    expect(windows[0].throttled, 'the 24 h window counts what the hour does').to.be.at.least(perMinute);
    expect(perMinute).to.be.at.least(health.throttledLastHour);
  });

  it('a PATCH changes or removes the throttle; bad values are a 400 naming the field', async () => {
    const w = await create('/patched', { rateLimit: { perSecond: 5, burst: 10 } });
    expect(w.body.webhook.rateLimit).to.deep.equal({ perSecond: 5, burst: 10 });
    const id = w.body.webhook.id as string;
    expect((await api.patch(`/api/rest/_webhooks/${id}`, { rateLimit: { perSecond: 0.5 } })).body.webhook.rateLimit).to.deep.equal({
      perSecond: 0.5,
      burst: 1,
    });
    expect((await api.patch(`/api/rest/_webhooks/${id}`, { rateLimit: null })).body.webhook.rateLimit).to.equal(null);
    const cases: Array<[unknown, string]> = [
      [{ perSecond: 0 }, 'rateLimit.perSecond'],
      [{ perSecond: 10_001 }, 'rateLimit.perSecond'],
      [{ perSecond: '20' }, 'rateLimit.perSecond'],
      [{}, 'rateLimit.perSecond'],
      [{ perSecond: 20, burst: 0 }, 'rateLimit.burst'],
      [{ perSecond: 20, burst: 1.5 }, 'rateLimit.burst'],
      [{ perSecond: 20, every: 1 }, 'rateLimit'],
      [20, 'rateLimit'],
    ];
    for (const [rateLimit, path] of cases) {
      for (const r of [await create('/x', { rateLimit }), await api.patch(`/api/rest/_webhooks/${id}`, { rateLimit })]) {
        expect(r.status, `${JSON.stringify(rateLimit)}: ${JSON.stringify(r.body)}`).to.equal(400);
        expect(r.body.error).to.equal('VALIDATION_ERROR');
        expect(r.body.violations.map((v: { path: string }) => v.path)).to.include(path);
      }
    }
  });
});
