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
    await t.ctx.pool.query(
      `INSERT INTO walgate.events (id, schema_name, table_name, operation, committed_at, columns, record, changed_fields)
       VALUES ('evt_negative', 'shop_master', 'orders', 'INSERT', now(), '{id}', '{1}', '{}')`,
    );
    await t.ctx.pool.query(
      `INSERT INTO walgate.deliveries (id, webhook_id, event_id, event_type, status, attempts, http_status, next_attempt_at, created_at)
       VALUES ('del_negative', $1, 'evt_negative', 'INSERT', 'delivered', 1, 200, now(), now())`,
      [id],
    );
  });
  after(() => t.close());

  const endpoints = (): Array<[method: string, path: string, body?: unknown]> => [
    [
      'POST',
      '/api/rest/_webhooks',
      { projectId: 'shop', environment: 'master', table: 'orders', events: ['INSERT'], url: 'https://93.184.216.34/h', secret: SECRET },
    ],
    ['GET', '/api/rest/_webhooks'],
    ['GET', `/api/rest/_webhooks/${id}`],
    ['PATCH', `/api/rest/_webhooks/${id}`, { active: true }],
    ['POST', `/api/rest/_webhooks/${id}/replay`, {}],
    ['GET', '/api/rest/_webhooks/_tables'],
    ['GET', `/api/rest/_webhooks/${id}/deliveries`],
    ['GET', `/api/rest/_webhooks/${id}/deliveries/del_negative`],
    ['POST', `/api/rest/_webhooks/${id}/deliveries/del_negative/retry`],
    ['GET', `/api/rest/_webhooks/${id}/minutes`],
    ['DELETE', `/api/rest/_webhooks/${id}`],
  ];

  const call = (method: string, path: string, headers: Record<string, string>, extra: RequestOptions = {}) =>
    new HttpClient(t.url).request(method, path, { headers, ...extra });

  const good = () => ({ authorization: `Bearer ${token}`, 'x-project-id': 'shop', environment: 'master' });

  const cases: Array<[string, () => Record<string, string>, number, string]> = [
    ['no token', () => ({ 'x-project-id': 'shop', environment: 'master' }), 401, 'AUTH_TOKEN_INVALID'],
    ['a wrong token', () => ({ ...good(), authorization: 'Bearer wgm_notarealtoken' }), 401, 'AUTH_TOKEN_INVALID'],
    [
      'an access token instead of a management token',
      () => ({ ...good(), authorization: 'Bearer eyJhbGciOiJFUzI1NiJ9.e30.sig' }),
      401,
      'AUTH_TOKEN_INVALID',
    ],
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

  it('a header violation says it is about a header (missing, or not a valid name)', async () => {
    for (const [method, path, body] of endpoints()) {
      const missing = await call(
        method,
        path,
        { authorization: `Bearer ${token}`, 'x-project-id': 'shop' },
        body === undefined ? {} : { body },
      );
      expect(missing.body.violations, `${method} ${path}`).to.deep.equal([
        { path: 'environment', message: 'the environment header is required' },
      ]);
    }
    const [method, path] = endpoints()[0]!;
    const bad = await call(method, path, { ...good(), 'x-project-id': 'no spaces' });
    expect(bad.body.violations).to.deep.equal([
      { path: 'x-project-id', message: 'the X-Project-Id header must be 1-63 letters, digits, `_` or `-`' },
    ]);
  });

  it('malformed JSON → 400 VALIDATION_ERROR on every endpoint with a body', async () => {
    for (const [method, path, body] of endpoints()) {
      if (body === undefined) continue;
      const res = await call(method, path, { ...good(), 'content-type': 'application/json' }, { raw: '{"table": ' });
      expect(res.status, `${method} ${path}`).to.equal(400);
      expect(res.body.error).to.equal('VALIDATION_ERROR');
    }
  });

  it('a body that does not decompress (gzip, deflate, br) → 400 VALIDATION_ERROR on every endpoint with a body', async () => {
    for (const encoding of ['gzip', 'deflate', 'br']) {
      for (const [method, path, body] of endpoints()) {
        if (body === undefined) continue;
        const res = await call(
          method,
          path,
          { ...good(), 'content-type': 'application/json', 'content-encoding': encoding },
          { raw: 'this is not compressed' },
        );
        expect(res.status, `${encoding}: ${method} ${path} ${res.text}`).to.equal(400);
        expect(res.body.error).to.equal('VALIDATION_ERROR');
      }
    }
  });

  it('a NUL character in the body → 400 VALIDATION_ERROR naming where, not a database error', async () => {
    // Postgres text cannot hold U+0000: such a request must be refused, not fail in the database.
    const create = endpoints()[0]![2] as Record<string, unknown>;
    const cases: Array<[method: string, path: string, body: unknown, violation: string]> = [
      ['POST', '/api/rest/_webhooks', { ...create, table: 'ord\u0000ers' }, 'table'],
      ['POST', '/api/rest/_webhooks', { ...create, filter: { id: 'a\u0000b' } }, 'filter.id'],
      ['POST', '/api/rest/_webhooks', { ...create, filter: { ['i\u0000d']: 1 } }, 'filter.i\u0000d'],
      ['PATCH', `/api/rest/_webhooks/${id}`, { table: 'ord\u0000ers' }, 'table'],
      ['PATCH', `/api/rest/_webhooks/${id}`, { select: ['id', 'x\u0000'] }, 'select.1'],
    ];
    for (const [method, path, body, violation] of cases) {
      const res = await call(method, path, { ...good(), 'content-type': 'application/json' }, { raw: JSON.stringify(body) });
      expect(res.status, `${method} ${path} ${res.text}`).to.equal(400);
      expect(res.body.error).to.equal('VALIDATION_ERROR');
      expect(
        res.body.violations.map((v: { path: string }) => v.path),
        `${method} ${path}`,
      ).to.deep.equal([violation]);
    }
  });

  it('an id that is not valid percent-encoding, or holds a NUL → 400 VALIDATION_ERROR on every endpoint that takes one', async () => {
    for (const bad of ['%E0%A4%A', '%', 'wh_%00x', '%00']) {
      for (const [method, path, body] of endpoints()) {
        if (!path.includes(id)) continue;
        const res = await call(method, path.replace(id, bad), good(), body === undefined ? {} : { body });
        expect(res.status, `${method} ${path.replace(id, bad)} ${res.text}`).to.equal(400);
        expect(res.body.error).to.equal('VALIDATION_ERROR');
      }
    }
  });

  it('a list cursor that was not made by the API → 400 VALIDATION_ERROR, whatever it holds', async () => {
    const cursors = [
      ['2020-01-01T00:00:00Z', '\u0000'],
      ['2020-01-01T00:00:00Z', "wh_x' OR '1'='1"],
      ['2020-01-01T00:00:00Z', 'x'.repeat(10_000)],
      ['not a date', 'wh_00'],
      null,
    ].map((c) => Buffer.from(JSON.stringify(c)).toString('base64url'));
    for (const cursor of cursors) {
      const res = await call('GET', `/api/rest/_webhooks?cursor=${cursor}`, good());
      expect(res.status, res.text).to.equal(400);
      expect(res.body.violations.map((v: { path: string }) => v.path)).to.deep.equal(['cursor']);
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
