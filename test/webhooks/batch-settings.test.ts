// The `batch` setting through the management API (docs/webhooks.md: Batching). No tailer runs:
// the public address is only validated, never contacted.
import { expect } from 'chai';
import { startTestApi, type TestApi } from '../support/api.js';
import { HttpClient } from '../support/http.js';

const PUBLIC_URL = 'https://93.184.216.34/hooks/orders';

describe('webhook management API: batch', function () {
  this.timeout(30_000);
  let t: TestApi;
  let api: HttpClient;

  before(async () => {
    t = await startTestApi();
    await t.provision({ projectId: 'shop', name: 'master' });
    await t.ctx.pool.query('CREATE TABLE shop_master.orders (id int PRIMARY KEY, status text)');
    const token = await t.managementToken('shop');
    api = new HttpClient(t.url, { authorization: `Bearer ${token}`, 'x-project-id': 'shop', environment: 'master' });
  });
  after(() => t.close());

  const body = (extra: Record<string, unknown> = {}) => ({
    projectId: 'shop',
    environment: 'master',
    table: 'orders',
    events: ['INSERT'],
    url: PUBLIC_URL,
    secret: 'whsec-super-secret-value-0001',
    ...extra,
  });
  const paths = (res: { body: any }) => res.body.violations.map((v: { path: string }) => v.path);

  it('off by default: the view says maxEvents 1 with the default wait and bytes', async () => {
    const res = await api.post('/api/rest/_webhooks', body());
    expect(res.status, JSON.stringify(res.body)).to.equal(201);
    expect(res.body.webhook.batch).to.deep.equal({ maxEvents: 1, maxWaitMs: 100, maxBytes: 1048576 });
  });

  it('set on create (omitted fields take their defaults), changed by PATCH, kept by a PATCH that does not name it, off with null', async () => {
    const created = await api.post('/api/rest/_webhooks', body({ batch: { maxEvents: 100 } }));
    expect(created.status, JSON.stringify(created.body)).to.equal(201);
    const { id } = created.body.webhook;
    expect(created.body.webhook.batch).to.deep.equal({ maxEvents: 100, maxWaitMs: 100, maxBytes: 1048576 });
    const patched = await api.patch(`/api/rest/_webhooks/${id}`, { batch: { maxEvents: 1000, maxWaitMs: 0, maxBytes: 10485760 } });
    expect(patched.status, JSON.stringify(patched.body)).to.equal(200);
    expect(patched.body.webhook.batch).to.deep.equal({ maxEvents: 1000, maxWaitMs: 0, maxBytes: 10485760 });
    const kept = await api.patch(`/api/rest/_webhooks/${id}`, { active: false });
    expect(kept.body.webhook.batch.maxEvents).to.equal(1000);
    expect((await api.get(`/api/rest/_webhooks/${id}`)).body.webhook.batch.maxEvents).to.equal(1000);
    const off = await api.patch(`/api/rest/_webhooks/${id}`, { batch: null });
    expect(off.body.webhook.batch).to.deep.equal({ maxEvents: 1, maxWaitMs: 100, maxBytes: 1048576 });
  });

  it('out of range, not a whole number, the wrong type or an unknown field: 400 VALIDATION_ERROR naming the field, on create and PATCH', async () => {
    const { id } = (await api.post('/api/rest/_webhooks', body())).body.webhook;
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ maxEvents: 0 }, 'batch.maxEvents'],
      [{ maxEvents: 1001 }, 'batch.maxEvents'],
      [{ maxEvents: 2.5 }, 'batch.maxEvents'],
      [{ maxEvents: '50' }, 'batch.maxEvents'],
      [{ maxWaitMs: -1 }, 'batch.maxWaitMs'],
      [{ maxWaitMs: 10_001 }, 'batch.maxWaitMs'],
      [{ maxBytes: 1023 }, 'batch.maxBytes'],
      [{ maxBytes: 10 * 1024 * 1024 + 1 }, 'batch.maxBytes'],
      [{ maxEvent: 10 }, 'batch'],
    ];
    for (const [batch, path] of cases) {
      for (const res of [await api.post('/api/rest/_webhooks', body({ batch })), await api.patch(`/api/rest/_webhooks/${id}`, { batch })]) {
        expect(res.status, JSON.stringify(batch)).to.equal(400);
        expect(res.body.error).to.equal('VALIDATION_ERROR');
        expect(paths(res), JSON.stringify(batch)).to.include(path);
      }
    }
    expect(paths(await api.post('/api/rest/_webhooks', body({ batch: 50 })))).to.include('batch');
  });
});
