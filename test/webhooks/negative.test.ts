// No delivery worker or tailer runs in this file: the public address below is only validated,
// never contacted (this machine has no network beyond the package registries).
import { expect } from 'chai';
import type { TestApi } from '../support/api.js';
import { startTestApi } from '../support/api.js';
import { HttpClient, type RequestOptions } from '../support/http.js';

// The shared negative cases, run against every management endpoint.

const SECRET = 'never-log-this-secret-4242';

describe('webhook management API: shared negative cases on every endpoint', function () {
  this.timeout(30_000);
  let t: TestApi;
  let token: string;
  let otherToken: string;
  let id: string;

  before(async () => {
    t = await startTestApi();
    await t.provision({ projectId: 'shop', name: 'master' });
    await t.provision({ projectId: 'other', name: 'master' });
    await t.ctx.pool.query('CREATE TABLE shop_master.orders (id int PRIMARY KEY)');
    token = await t.managementToken('shop');
    otherToken = await t.managementToken('other');
    const res = await new HttpClient(t.url, { authorization: `Bearer ${token}`, 'x-project-id': 'shop', environment: 'master' }).post(
      '/api/rest/_webhooks',
      { projectId: 'shop', environment: 'master', table: 'orders', events: ['INSERT'], url: 'https://93.184.216.34/h', secret: SECRET },
    );
    expect(res.status).to.equal(201);
    id = res.body.webhook.id;
  });
  after(() => t.close());

  const endpoints = (): Array<[method: string, path: string, body?: unknown]> => [
    ['POST', '/api/rest/_webhooks', { projectId: 'shop', environment: 'master', table: 'orders', events: ['INSERT'], url: 'https://93.184.216.34/h', secret: SECRET }],
    ['GET', '/api/rest/_webhooks'],
    ['GET', `/api/rest/_webhooks/${id}`],
    ['PATCH', `/api/rest/_webhooks/${id}`, { active: true }],
    ['POST', `/api/rest/_webhooks/${id}/replay`, {}],
    ['DELETE', `/api/rest/_webhooks/${id}`],
  ];

  const call = (method: string, path: string, headers: Record<string, string>, extra: RequestOptions = {}) =>
    new HttpClient(t.url).request(method, path, { headers, ...extra });

  const good = () => ({ authorization: `Bearer ${token}`, 'x-project-id': 'shop', environment: 'master' });

  const cases: Array<[string, () => Record<string, string>, number, string]> = [
    ['no token', () => ({ 'x-project-id': 'shop', environment: 'master' }), 401, 'AUTH_TOKEN_INVALID'],
    ['a wrong token', () => ({ ...good(), authorization: 'Bearer wgm_notarealtoken' }), 401, 'AUTH_TOKEN_INVALID'],
    ['an access token instead of a management token', () => ({ ...good(), authorization: 'Bearer eyJhbGciOiJFUzI1NiJ9.e30.sig' }), 401, 'AUTH_TOKEN_INVALID'],
    ["another project's token", () => ({ ...good(), authorization: `Bearer ${otherToken}` }), 403, 'FORBIDDEN'],
    ['no X-Project-ID', () => ({ authorization: `Bearer ${token}`, environment: 'master' }), 400, 'VALIDATION_ERROR'],
    ['no environment header', () => ({ authorization: `Bearer ${token}`, 'x-project-id': 'shop' }), 400, 'VALIDATION_ERROR'],
    ['an unknown environment', () => ({ ...good(), environment: 'nope' }), 400, 'VALIDATION_ERROR'],
  ];

  for (const [name, headers, status, code] of cases) {
    it(`${name} → ${status} ${code} on every endpoint`, async () => {
      for (const [method, path, body] of endpoints()) {
        const res = await call(method, path, headers(), body === undefined ? {} : { body });
        expect(res.status, `${method} ${path}`).to.equal(status);
        expect(res.body.error, `${method} ${path}`).to.equal(code);
      }
    });
  }

  it('malformed JSON → 400 VALIDATION_ERROR on every endpoint with a body', async () => {
    for (const [method, path, body] of endpoints()) {
      if (body === undefined) continue;
      const res = await call(method, path, { ...good(), 'content-type': 'application/json' }, { raw: '{"table": ' });
      expect(res.status, `${method} ${path}`).to.equal(400);
      expect(res.body.error).to.equal('VALIDATION_ERROR');
    }
  });

  it('an unknown id → 404 WEBHOOK_NOT_FOUND on every endpoint that takes one', async () => {
    for (const [method, path, body] of endpoints()) {
      if (!path.includes(id)) continue;
      const res = await call(method, path.replace(id, 'wh_doesnotexist'), good(), body === undefined ? {} : { body });
      expect(res.status, `${method} ${path}`).to.equal(404);
      expect(res.body.error).to.equal('WEBHOOK_NOT_FOUND');
    }
  });

  it('the secret appears in no response body and no log line', async () => {
    const bodies: string[] = [];
    for (const [method, path, body] of endpoints()) {
      const res = await call(method, path, good(), body === undefined ? {} : { body });
      expect(res.status, `${method} ${path}`).to.be.below(300);
      bodies.push(res.text);
    }
    expect(bodies.join('\n')).not.to.contain(SECRET);
    expect(t.logs.lines.length).to.be.above(5);
    expect(t.logs.text).not.to.contain(SECRET);
    expect(t.logs.text).not.to.contain(token);
  });
});
