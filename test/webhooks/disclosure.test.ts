import { expect } from 'chai';
import type { HostLookup } from '../../src/core/net/address-policy.js';
import { startTestApi, type TestApi } from '../support/api.js';
import { HttpClient } from '../support/http.js';

// A refused subscriber URL says why (a private address), but not which address the name resolves
// to: the caller must not learn the inside of our network by asking.

describe('webhook management API: a refused URL does not disclose addresses', function () {
  this.timeout(30_000);
  let t: TestApi;
  let api: HttpClient;
  const lookup: HostLookup = async (host) =>
    host === 'billing.internal.test' ? [{ address: '10.20.30.40', family: 4 }] : [{ address: '93.184.216.34', family: 4 }];

  before(async () => {
    t = await startTestApi({ env: { WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'false' }, overrides: { lookup } });
    await t.provision({ projectId: 'shop', name: 'master' });
    await t.ctx.pool.query('CREATE TABLE shop_master.orders (id int PRIMARY KEY)');
    api = new HttpClient(t.url, {
      authorization: `Bearer ${await t.managementToken('shop')}`,
      'x-project-id': 'shop',
      environment: 'master',
    });
  });
  after(() => t?.close());

  it('a name resolving to a private address is refused without echoing the address', async () => {
    const res = await api.post('/api/rest/_webhooks', {
      projectId: 'shop',
      environment: 'master',
      table: 'orders',
      events: ['INSERT'],
      url: 'https://billing.internal.test/hook',
      secret: 'disclosure-secret-0123456789',
    });
    expect(res.status).to.equal(400);
    expect(res.body.error).to.equal('VALIDATION_ERROR');
    expect(JSON.stringify(res.body)).to.match(/must not point to a private address/);
    expect(res.text).to.not.contain('10.20.30.40');
  });
});
