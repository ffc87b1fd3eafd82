// No delivery worker or tailer runs in this file: the public address below is only validated,
// never contacted.
import { expect } from 'chai';
import type { TestApi } from '../support/api.js';
import { startTestApi } from '../support/api.js';
import { HttpClient } from '../support/http.js';

const PUBLIC_URL = 'https://93.184.216.34/hooks/orders';
const LONE = '\ud800';

describe('webhook management API: no 500 from ordinary calls', function () {
  this.timeout(120_000);
  let t: TestApi;
  let api: HttpClient;

  before(async () => {
    t = await startTestApi();
    await t.provision({ projectId: 'shop', name: 'master' });
    await t.ctx.pool.query(`CREATE TABLE shop_master.orders (id int PRIMARY KEY, status text);
                            CREATE TABLE shop_master.invoices (id int PRIMARY KEY, status text)`);
    api = new HttpClient(t.url, {
      authorization: `Bearer ${await t.managementToken('shop')}`,
      'x-project-id': 'shop',
      environment: 'master',
    });
  });
  after(() => t.close());

  async function create(table = 'orders'): Promise<string> {
    const res = await api.post('/api/rest/_webhooks', {
      projectId: 'shop',
      environment: 'master',
      table,
      events: ['INSERT'],
      url: PUBLIC_URL,
      secret: 'robust-secret-0123456789',
    });
    expect(res.status, JSON.stringify(res.body)).to.equal(201);
    return res.body.webhook.id;
  }

  it('20 rounds of concurrent DELETE + PATCH + replay of one subscription with history: documented statuses only, never a 5xx', async () => {
    for (let round = 0; round < 20; round++) {
      const id = await create();
      // A history to cascade: delivered and dead deliveries with attempts.
      await t.ctx.pool.query(
        `WITH d AS (
           INSERT INTO walgate.deliveries (id, webhook_id, event_id, event_type, status, attempts, next_attempt_at, created_at)
           SELECT 'del_r${round}_' || g, $1, 'evt_' || g, 'INSERT', CASE WHEN g % 2 = 0 THEN 'delivered' ELSE 'dead' END, 1, now(), now()
             FROM generate_series(1, 2000) g RETURNING id)
         INSERT INTO walgate.delivery_attempts (delivery_id, attempt, started_at, duration_ms, http_status)
         SELECT id, 1, now(), 5, 500 FROM d`,
        [id],
      );
      const base = `/api/rest/_webhooks/${id}`;
      const answers = await Promise.all([
        api.delete(base),
        api.patch(base, { active: round % 2 === 0 }),
        api.patch(base, { table: round % 2 ? 'invoices' : 'orders' }),
        api.post(`${base}/replay`, {}),
        api.delete(base),
      ]);
      const statuses = answers.map((a) => a.status);
      for (const a of answers) expect(a.status, `round ${round}: ${statuses.join(' ')} ${a.text}`).to.be.oneOf([200, 202, 204, 404]);
      expect(
        statuses.filter((s) => s === 204),
        `round ${round}: one DELETE wins`,
      ).to.have.length(1);
    }
  });

  it('a lone surrogate in any string of a body or query → 400 VALIDATION_ERROR naming it', async () => {
    const id = await create();
    const valid = {
      projectId: 'shop',
      environment: 'master',
      table: 'orders',
      events: ['INSERT'],
      url: PUBLIC_URL,
      secret: 'robust-secret-0123456789',
    };
    const bodies: Array<[string, string, Record<string, unknown>]> = [
      ['POST', '/api/rest/_webhooks', { ...valid, table: `orders${LONE}` }],
      ['POST', '/api/rest/_webhooks', { ...valid, url: `${PUBLIC_URL}${LONE}` }],
      ['POST', '/api/rest/_webhooks', { ...valid, secret: `robust-secret-0123456789${LONE}` }],
      ['POST', '/api/rest/_webhooks', { ...valid, events: [`INSERT${LONE}`] }],
      ['POST', '/api/rest/_webhooks', { ...valid, filter: { status: `paid${LONE}` } }],
      ['POST', '/api/rest/_webhooks', { ...valid, filter: { [`status${LONE}`]: 'paid' } }],
      ['POST', '/api/rest/_webhooks', { ...valid, select: [`id${LONE}`] }],
      ['PATCH', `/api/rest/_webhooks/${id}`, { filter: { status: `\udc00paid` } }],
      ['PATCH', `/api/rest/_webhooks/${id}`, { url: `${PUBLIC_URL}?q=${LONE}` }],
      ['POST', `/api/rest/_webhooks/${id}/replay`, { since: `2026-01-01T00:00:00Z${LONE}` }],
    ];
    for (const [method, path, body] of bodies) {
      const res = await api.request(method, path, { body });
      expect(res.status, `${method} ${path} ${JSON.stringify(body)}: ${res.text}`).to.equal(400);
      expect(res.body.error).to.equal('VALIDATION_ERROR');
    }
    for (const query of [`cursor=${encodeURIComponent('x')}%ED%A0%80`, `status=dead${encodeURIComponent('\u00e9')}`]) {
      const res = await api.get(`/api/rest/_webhooks/${id}/deliveries?${query}`);
      expect(res.status, `${query}: ${res.text}`).to.equal(400);
    }
  });

  it('forged cursors and dates outside the representable range → 400 VALIDATION_ERROR, in every cursor and date parameter', async () => {
    const id = await create();
    const cursor = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
    const forged = [
      cursor(['-271821-04-20T00:00:00.000Z', 'wh_abc']),
      cursor(['+275760-09-13T00:00:00.000Z', 'wh_abc']),
      cursor(['-271821-04-20T00:00:00.000Z', 'del_abc']),
      cursor(['0000-01-01T00:00:00.000Z', 'del_abc']),
      cursor([1e300, 'wh_abc']),
      cursor(['2026-01-01T00:00:00Z', `wh_${LONE}`]),
      cursor({ a: 1 }),
      cursor('x'),
      'not-base64-%%%',
    ];
    for (const c of forged) {
      for (const path of ['/api/rest/_webhooks', `/api/rest/_webhooks/${id}/deliveries`]) {
        const res = await api.get(`${path}?cursor=${encodeURIComponent(c)}`);
        expect(res.status, `${path} cursor ${Buffer.from(c, 'base64url').toString()}: ${res.text}`).to.equal(400);
        expect(res.body.error).to.equal('VALIDATION_ERROR');
      }
    }
    for (const at of ['0000-01-01T00:00:00Z', '+275760-09-13T00:00:00Z', '-271821-04-20T00:00:00Z', '10000-01-01T00:00:00Z']) {
      for (const name of ['since', 'until']) {
        const list = await api.get(`/api/rest/_webhooks/${id}/deliveries?${name}=${encodeURIComponent(at)}`);
        expect(list.status, `${name}=${at}: ${list.text}`).to.equal(400);
        const replay = await api.post(`/api/rest/_webhooks/${id}/replay`, { [name]: at });
        expect(replay.status, `replay ${name}=${at}: ${replay.text}`).to.equal(400);
      }
    }
  });

  it('a large replay runs as a background job: 202 {replay: {id, state, count}}, then GET …/replays/{id} until done; a small one is done at once', async () => {
    const id = await create();
    const other = await create();
    await t.ctx.pool.query(
      `INSERT INTO walgate.deliveries (id, webhook_id, event_id, event_type, status, attempts, next_attempt_at, created_at)
       SELECT 'del_big_' || g, $1, 'evt_big_' || g, 'INSERT', 'dead', 5, now(), now() - g * interval '1 second' FROM generate_series(1, 5000) g`,
      [id],
    );
    const started = Date.now();
    const res = await api.post(`/api/rest/_webhooks/${id}/replay`, {});
    expect(res.status).to.equal(202);
    expect(res.body.replay).to.include({ state: 'running', count: 5000 });
    expect(res.body.replay.id).to.match(/^rpl_/);
    expect(Date.now() - started, 'answered before the replay is done').to.be.below(5000);
    const path = `/api/rest/_webhooks/${id}/replays/${res.body.replay.id}`;
    let job: any;
    for (const until = Date.now() + 60_000; Date.now() < until; await new Promise((r) => setTimeout(r, 100))) {
      const got = await api.get(path);
      expect(got.status).to.equal(200);
      job = got.body.replay;
      if (job.state !== 'running') break;
    }
    expect(job).to.include({ state: 'done', count: 5000, replayed: 5000 });
    expect(job.finishedAt).to.be.a('string');
    const { rows } = await t.ctx.pool.query(
      `SELECT count(*)::int AS n FROM walgate.deliveries WHERE webhook_id = $1 AND status = 'pending'`,
      [id],
    );
    expect(rows[0].n).to.equal(5000);
    // Another subscription's replay, an unknown id, a lone surrogate: not found, or refused.
    expect((await api.get(`/api/rest/_webhooks/${other}/replays/${res.body.replay.id}`)).body.error).to.equal('REPLAY_NOT_FOUND');
    expect((await api.get(`/api/rest/_webhooks/${id}/replays/rpl_nope`)).status).to.equal(404);
    // A small one: done within the request.
    const small = await api.post(`/api/rest/_webhooks/${other}/replay`, {});
    expect(small.body.replay).to.include({ state: 'done', count: 0, replayed: 0 });
  });
});
