import { expect } from 'chai';
import { managementClient } from '../support/api.js';
import type { HttpClient } from '../support/http.js';
import { eventually, startPipeline, type Pipeline } from './support.js';

// A retry schedule per subscription (`retry: {delaysMs}`), an environment's default
// (`webhookRetryDelaysMs`), and the platform's (WEBHOOK_RETRY_DELAYS_MS) under both: as many
// requests as the schedule has values, then dead — each subscription by its own, in one run.

describe('delivery: retry policy per subscription', function () {
  this.timeout(60_000);
  let p: Pipeline;
  let api: HttpClient;
  const requestsTo = (path: string) => p.receiver.requests.filter((r) => r.path === path).length;
  const create = (path: string, extra: Record<string, unknown> = {}) =>
    api.post('/api/rest/_webhooks', {
      projectId: 'shop',
      environment: 'master',
      table: 'orders',
      events: ['INSERT'],
      url: `${p.receiver.url}${path}`,
      secret: 'whsec-retry-policy-0123456789',
      ...extra,
    });
  /** Its one delivery, once dead. */
  const deadOf = (id: string) =>
    eventually(
      () => p.delivery(id),
      (r) => r.length === 1 && r[0]!.status === 'dead',
      20_000,
    );

  before(async () => {
    // The platform's schedule: five attempts. The breaker stays out of the way.
    p = await startPipeline({ WEBHOOK_RETRY_DELAYS_MS: '0,100,100,100,100', WEBHOOK_BREAKER_FAILURES: '1000' });
    api = await managementClient(p.t, 'shop');
    p.receiver.behave = () => ({ status: 503 });
  });
  after(() => p?.close());
  beforeEach(async () => {
    await p.removeSubscriptions();
    await p.writer.query('TRUNCATE shop_master.orders');
    p.receiver.requests.length = 0;
  });
  afterEach(async () => {
    expect((await api.patch('/api/rest/_environment', { webhookRetryDelaysMs: null })).status).to.equal(200);
  });

  it('delaysMs [0, 200, 200] ends dead after exactly 3 requests; a subscription on the platform default keeps its 5', async () => {
    const own = await create('/own', { retry: { delaysMs: [0, 200, 200] } });
    expect(own.status, JSON.stringify(own.body)).to.equal(201);
    expect(own.body.webhook.retry).to.deep.equal({ delaysMs: [0, 200, 200] });
    const platform = await create('/platform');
    expect(platform.body.webhook.retry).to.equal(null);
    await p.writer.query(`INSERT INTO shop_master.orders VALUES (1, 'new', 1)`);
    const [ownDead] = await deadOf(own.body.webhook.id);
    const [platformDead] = await deadOf(platform.body.webhook.id);
    expect(ownDead!.attempts).to.equal(3);
    expect(requestsTo('/own')).to.equal(3);
    expect(platformDead!.attempts).to.equal(5);
    expect(requestsTo('/platform')).to.equal(5);
    // The waits followed the schedule: the last request ~400 ms (± 20 %) after the first.
    const at = p.receiver.requests.filter((r) => r.path === '/own').map((r) => r.at);
    expect(at[2]! - at[0]!).to.be.within(300, 3000);
  });

  it("the environment's default applies to subscriptions without their own; a subscription's own still wins; PATCH null returns it to the default", async () => {
    const set = await api.patch('/api/rest/_environment', { webhookRetryDelaysMs: [0, 100] });
    expect(set.status, JSON.stringify(set.body)).to.equal(200);
    expect(set.body.webhookRetryDelaysMs).to.deep.equal([0, 100]);
    const inherits = await create('/inherits');
    const own = await create('/own', { retry: { delaysMs: [0, 50, 50, 50] } });
    await p.writer.query(`INSERT INTO shop_master.orders VALUES (1, 'new', 1)`);
    expect((await deadOf(inherits.body.webhook.id))[0]!.attempts).to.equal(2);
    expect((await deadOf(own.body.webhook.id))[0]!.attempts).to.equal(4);
    expect(requestsTo('/inherits')).to.equal(2);
    expect(requestsTo('/own')).to.equal(4);

    const cleared = await api.patch(`/api/rest/_webhooks/${own.body.webhook.id}`, { retry: null });
    expect(cleared.status).to.equal(200);
    expect(cleared.body.webhook.retry).to.equal(null);
    p.receiver.requests.length = 0;
    await p.writer.query(`INSERT INTO shop_master.orders VALUES (2, 'new', 1)`);
    await eventually(
      () => p.delivery(own.body.webhook.id),
      (r) => r.filter((d) => d.status === 'dead').length === 2,
      20_000,
    );
    expect(requestsTo('/own')).to.equal(2);
  });

  it('bad schedules are a 400 VALIDATION_ERROR naming the place, on create, PATCH and the environment', async () => {
    const cases: Array<[unknown, string]> = [
      [{ delaysMs: [] }, 'retry.delaysMs'],
      [{ delaysMs: Array.from({ length: 21 }, () => 0) }, 'retry.delaysMs'],
      [{ delaysMs: [0, -1] }, 'retry.delaysMs.1'],
      [{ delaysMs: [0, 86_400_001] }, 'retry.delaysMs.1'],
      [{ delaysMs: [0, 1.5] }, 'retry.delaysMs.1'],
      [{ delaysMs: [0, '5'] }, 'retry.delaysMs.1'],
      [{ delaysMs: [1000, 1000] }, 'retry.delaysMs.0'],
      [{ delaysMs: [0], maxAttempts: 3 }, 'retry'],
      [{}, 'retry.delaysMs'],
      [[0, 100], 'retry'],
    ];
    const existing = await create('/x');
    for (const [retry, path] of cases) {
      for (const r of [await create('/x', { retry }), await api.patch(`/api/rest/_webhooks/${existing.body.webhook.id}`, { retry })]) {
        expect(r.status, `${JSON.stringify(retry)}: ${JSON.stringify(r.body)}`).to.equal(400);
        expect(r.body.error).to.equal('VALIDATION_ERROR');
        expect(
          r.body.violations.map((v: { path: string }) => v.path),
          JSON.stringify(retry),
        ).to.include(path);
      }
    }
    const env = await api.patch('/api/rest/_environment', { webhookRetryDelaysMs: [5, 10] });
    expect(env.status).to.equal(400);
    expect(env.body.violations[0].path).to.equal('webhookRetryDelaysMs.0');
    expect((await api.get(`/api/rest/_webhooks/${existing.body.webhook.id}`)).body.webhook.retry).to.equal(null);
  });
});
