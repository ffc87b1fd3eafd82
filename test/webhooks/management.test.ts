// No delivery worker or tailer runs in this file: the public address below is only validated,
// never contacted (this machine has no network beyond the package registries).
import { expect } from 'chai';
import type { TestApi } from '../support/api.js';
import { startTestApi } from '../support/api.js';
import { HttpClient } from '../support/http.js';

const SECRET = 'whsec-super-secret-value-0001';
const PUBLIC_URL = 'https://93.184.216.34/hooks/orders';

describe('webhook management API', function () {
  this.timeout(30_000);
  let t: TestApi;
  let api: HttpClient;
  let token: string;

  before(async () => {
    t = await startTestApi();
    await t.provision({ projectId: 'shop', name: 'master' });
    await t.provision({ projectId: 'shop', name: 'staging' });
    await t.provision({ projectId: 'other', name: 'master' });
    await t.ctx.pool.query(`
      CREATE TABLE shop_master.orders (id int PRIMARY KEY, status text, total numeric, "Weird ""col"" name" text);
      CREATE TABLE shop_master."Odd.Table 'x'" (id int PRIMARY KEY);
      CREATE VIEW shop_master.order_view AS SELECT * FROM shop_master.orders;
      CREATE TABLE shop_staging.orders (id int PRIMARY KEY);
      CREATE TABLE shop_master.log_lines (at timestamptz, line text);
      CREATE TABLE shop_master.order_lines (order_id int, line int, qty int, PRIMARY KEY (order_id, line));
    `);
    token = await t.managementToken('shop');
    api = new HttpClient(t.url, { authorization: `Bearer ${token}`, 'x-project-id': 'shop', environment: 'master' });
  });
  after(() => t.close());

  const valid = (extra: Record<string, unknown> = {}) => ({
    projectId: 'shop',
    environment: 'master',
    table: 'orders',
    events: ['INSERT', 'UPDATE'],
    url: PUBLIC_URL,
    secret: SECRET,
    ...extra,
  });

  async function create(extra: Record<string, unknown> = {}) {
    const res = await api.post('/api/rest/_webhooks', valid(extra));
    expect(res.status, JSON.stringify(res.body)).to.equal(201);
    return res.body.webhook;
  }

  const violationPaths = (res: { body: any }) => res.body.violations.map((v: { path: string }) => v.path);

  it('creates a subscription: 201 {webhook}, the table joins the publication with REPLICA IDENTITY FULL', async () => {
    const res = await api.post('/api/rest/_webhooks', valid({ filter: { status: 'paid' }, select: ['id', 'status'] }));
    expect(res.status).to.equal(201);
    const w = res.body.webhook;
    expect(w).to.have.all.keys(
      'id',
      'table',
      'events',
      'url',
      'active',
      'state',
      'filter',
      'select',
      'ordering',
      'history',
      'onDead',
      'batch',
      'createdAt',
      'updatedAt',
      'disabledReason',
      'disabledAt',
      'problems',
      'headers',
      'retry',
      'rateLimit',
      'destination',
    );
    expect(w.destination, 'an https: subscription names no destination').to.equal(null);
    expect(w).to.include({
      disabledReason: null,
      disabledAt: null,
      ordering: 'none',
      history: 'full',
      state: 'healthy',
      retry: null,
      rateLimit: null,
    });
    expect(w.id).to.match(/^wh_[0-9a-f]{32}$/);
    expect(w).to.deep.include({
      table: 'orders',
      events: ['INSERT', 'UPDATE'],
      url: PUBLIC_URL,
      active: true,
      filter: { status: 'paid' },
      select: ['id', 'status'],
    });
    const { rows } = await t.ctx.pool.query(
      `SELECT c.relreplident, EXISTS (SELECT 1 FROM pg_publication_tables WHERE pubname = 'walgate' AND schemaname = 'shop_master' AND tablename = 'orders') AS published
         FROM pg_class c WHERE c.oid = 'shop_master.orders'::regclass`,
    );
    expect(rows[0]).to.deep.equal({ relreplident: 'f', published: true });
    const slot = await t.ctx.pool.query(`SELECT 1 FROM pg_replication_slots WHERE database = current_database()`);
    expect(slot.rowCount, 'the slot exists from the first subscription on').to.equal(1);
  });

  it('the /gw prefix of the seed reaches the same API', async () => {
    const res = await api.get('/gw/api/rest/_webhooks');
    expect(res.status).to.equal(200);
  });

  it('gets a subscription with its newest deliveries (never the secret)', async () => {
    const w = await create();
    for (let i = 0; i < 55; i++) {
      await t.ctx.pool.query(
        `INSERT INTO walgate.deliveries (id, webhook_id, event_id, event_type, status, attempts, http_status, last_error, next_attempt_at, created_at, delivered_at)
         VALUES ($1, $2, $3, 'INSERT', $4, $5, $6, $7, now(), now() + make_interval(secs => $8), $9)`,
        [
          `del_t${i}`,
          w.id,
          `evt_t${i}`,
          i === 54 ? 'dead' : 'delivered',
          i === 54 ? 5 : 1,
          i === 54 ? 500 : 200,
          i === 54 ? 'HTTP 500' : null,
          i,
          i === 54 ? null : new Date(),
        ],
      );
    }
    const res = await api.get(`/api/rest/_webhooks/${w.id}`);
    expect(res.status).to.equal(200);
    expect(res.body.webhook).to.deep.equal(w);
    expect(res.body.deliveries).to.have.length(50);
    const newest = res.body.deliveries[0];
    expect(newest).to.include({
      id: 'del_t54',
      eventId: 'evt_t54',
      status: 'dead',
      httpStatus: 500,
      attempts: 5,
      lastError: 'HTTP 500',
      nextAttemptAt: null,
      deliveredAt: null,
    });
    expect(new Date(newest.createdAt).toISOString()).to.equal(newest.createdAt);
    expect(res.text).not.to.contain(SECRET);
  });

  it('lists newest first across pages with a cursor', async () => {
    const { http: staging } = { http: api.with({ environment: 'staging' }) };
    const ids: string[] = [];
    for (let i = 0; i < 7; i++) {
      const res = await staging.post('/api/rest/_webhooks', valid({ environment: 'staging' }));
      expect(res.status).to.equal(201);
      ids.push(res.body.webhook.id);
    }
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const res: any = await staging.get(`/api/rest/_webhooks?limit=3${cursor ? `&cursor=${cursor}` : ''}`);
      expect(res.status).to.equal(200);
      expect(res.body).to.have.all.keys('webhooks', 'nextCursor');
      seen.push(...res.body.webhooks.map((w: { id: string }) => w.id));
      cursor = res.body.nextCursor;
      pages++;
    } while (cursor);
    expect(pages).to.equal(3);
    expect(seen).to.have.members(ids);
    expect(seen).to.have.length(7);
    const bad = await staging.get('/api/rest/_webhooks?cursor=garbage');
    expect(bad.status).to.equal(400);
    expect(violationPaths(bad)).to.deep.equal(['cursor']);
    for (const q of ['limit=0', 'limit=101', 'limit=abc', 'unknown=1']) {
      expect((await staging.get(`/api/rest/_webhooks?${q}`)).status, q).to.equal(400);
    }
  });

  it('patches partially: a new secret, pause and resume, filter cleared with null', async () => {
    const w = await create({ filter: { status: 'paid' } });
    const paused = await api.patch(`/api/rest/_webhooks/${w.id}`, { active: false });
    expect(paused.status).to.equal(200);
    expect(paused.body.webhook).to.deep.include({ active: false, filter: { status: 'paid' }, events: ['INSERT', 'UPDATE'] });
    const before = (await t.ctx.pool.query('SELECT secret FROM walgate.webhooks WHERE id = $1', [w.id])).rows[0].secret;
    const rotated = await api.patch(`/api/rest/_webhooks/${w.id}`, { secret: 'a-brand-new-secret-0002', active: true, filter: null });
    expect(rotated.status).to.equal(200);
    expect(rotated.body.webhook).to.deep.include({ active: true, filter: null });
    expect(rotated.text).not.to.contain('a-brand-new-secret-0002');
    const after = (await t.ctx.pool.query('SELECT secret FROM walgate.webhooks WHERE id = $1', [w.id])).rows[0].secret;
    expect(Buffer.compare(before, after)).not.to.equal(0);
    expect(after.toString('latin1')).not.to.contain('a-brand-new-secret');
    const empty = await api.patch(`/api/rest/_webhooks/${w.id}`, {});
    expect(empty.status).to.equal(400);
    const mismatch = await api.patch(`/api/rest/_webhooks/${w.id}`, { environment: 'staging' });
    expect(mismatch.status).to.equal(400);
    expect(violationPaths(mismatch)).to.deep.equal(['environment']);
  });

  it('deletes: 204, then 404; the table leaves the publication with its last subscription', async () => {
    await t.ctx.pool.query('CREATE TABLE shop_master.lonely (id int PRIMARY KEY)');
    const w = await create({ table: 'lonely' });
    const published = () =>
      t.ctx.pool.query(
        `SELECT 1 FROM pg_publication_tables WHERE pubname = 'walgate' AND schemaname = 'shop_master' AND tablename = 'lonely'`,
      );
    expect((await published()).rowCount).to.equal(1);
    const res = await api.delete(`/api/rest/_webhooks/${w.id}`);
    expect(res.status).to.equal(204);
    expect(res.text).to.equal('');
    expect((await api.get(`/api/rest/_webhooks/${w.id}`)).body.error).to.equal('WEBHOOK_NOT_FOUND');
    expect((await api.delete(`/api/rest/_webhooks/${w.id}`)).status).to.equal(404);
    expect((await published()).rowCount).to.equal(0);
  });

  it('replays dead letters of one subscription: 202 {replayed}', async () => {
    const w = await create();
    const other = await create();
    for (const [id, wh, status, at] of [
      ['del_r1', w.id, 'dead', '2026-01-01T00:00:00Z'],
      ['del_r2', w.id, 'dead', '2026-02-01T00:00:00Z'],
      ['del_r3', w.id, 'delivered', '2026-02-01T00:00:00Z'],
      ['del_r4', other.id, 'dead', '2026-02-01T00:00:00Z'],
    ]) {
      await t.ctx.pool.query(
        `INSERT INTO walgate.deliveries (id, webhook_id, event_id, event_type, status, attempts, next_attempt_at, created_at)
         VALUES ($1, $2, $1, 'INSERT', $3, 5, now(), $4)`,
        [id, wh, status, at],
      );
    }
    const ranged = await api.post(`/api/rest/_webhooks/${w.id}/replay`, { since: '2026-01-15T00:00:00Z' });
    expect(ranged.status).to.equal(202);
    expect(ranged.body.replayed).to.equal(1);
    expect(ranged.body.replay).to.include({ state: 'done', count: 1, replayed: 1 });
    const rest = await api.post(`/api/rest/_webhooks/${w.id}/replay`);
    expect(rest.body.replayed).to.equal(1);
    const { rows } = await t.ctx.pool.query(`SELECT id, status, attempts FROM walgate.deliveries WHERE id LIKE 'del_r%' ORDER BY id`);
    expect(rows.map((r) => [r.id, r.status, r.attempts])).to.deep.equal([
      ['del_r1', 'pending', 0],
      ['del_r2', 'pending', 0],
      ['del_r3', 'delivered', 5],
      ['del_r4', 'dead', 5],
    ]);
    const bad = await api.post(`/api/rest/_webhooks/${w.id}/replay`, { since: 'yesterday' });
    expect(bad.status).to.equal(400);
    expect(violationPaths(bad)).to.deep.equal(['since']);
  });

  describe('ordering', () => {
    it('is "none" unless asked; "row" is kept and shown on create, get, list and PATCH', async () => {
      const plain = await create();
      expect(plain.ordering).to.equal('none');
      const ordered = await create({ ordering: 'row', table: 'order_lines' });
      expect(ordered.ordering).to.equal('row');
      expect((await api.get(`/api/rest/_webhooks/${ordered.id}`)).body.webhook.ordering).to.equal('row');
      const listed = await api.get('/api/rest/_webhooks?limit=100');
      expect(listed.body.webhooks.find((w: { id: string }) => w.id === ordered.id).ordering).to.equal('row');
      const stored = await t.ctx.pool.query('SELECT ordering FROM walgate.webhooks WHERE id = $1', [ordered.id]);
      expect(stored.rows[0].ordering).to.equal('row');
      const on = await api.patch(`/api/rest/_webhooks/${plain.id}`, { ordering: 'row' });
      expect(on.status, JSON.stringify(on.body)).to.equal(200);
      expect(on.body.webhook.ordering).to.equal('row');
      // A PATCH that does not name it keeps it.
      const paused = await api.patch(`/api/rest/_webhooks/${plain.id}`, { active: false });
      expect(paused.body.webhook).to.include({ ordering: 'row', active: false });
      const off = await api.patch(`/api/rest/_webhooks/${plain.id}`, { ordering: 'none' });
      expect(off.body.webhook.ordering).to.equal('none');
    });

    it('an unknown value is a 400 VALIDATION_ERROR at ordering, on create and PATCH', async () => {
      for (const value of ['rows', 'ROW', '', null, 1, true]) {
        const res = await api.post('/api/rest/_webhooks', valid({ ordering: value }));
        expect(res.status, JSON.stringify(value)).to.equal(400);
        expect(res.body.error).to.equal('VALIDATION_ERROR');
        expect(violationPaths(res)).to.deep.equal(['ordering']);
      }
      const w = await create();
      const res = await api.patch(`/api/rest/_webhooks/${w.id}`, { ordering: 'table' });
      expect(res.status).to.equal(400);
      expect(violationPaths(res)).to.deep.equal(['ordering']);
    });

    it('"row" on a table without a primary key is a 400 that says why, on create and on PATCH', async () => {
      const res = await api.post('/api/rest/_webhooks', valid({ table: 'log_lines', ordering: 'row' }));
      expect(res.status).to.equal(400);
      expect(res.body.error).to.equal('VALIDATION_ERROR');
      expect(res.body.violations).to.have.length(1);
      expect(res.body.violations[0].path).to.equal('ordering');
      expect(res.body.violations[0].message).to.contain('primary key').and.contain('log_lines');
      // Unordered, the same table is fine.
      const unordered = await create({ table: 'log_lines' });
      // PATCH that sets "row" on it: refused, nothing changed.
      const set = await api.patch(`/api/rest/_webhooks/${unordered.id}`, { ordering: 'row' });
      expect(set.status).to.equal(400);
      expect(violationPaths(set)).to.deep.equal(['ordering']);
      expect((await api.get(`/api/rest/_webhooks/${unordered.id}`)).body.webhook.ordering).to.equal('none');
      // PATCH that moves a row-ordered subscription to a table without a key: refused too.
      const ordered = await create({ ordering: 'row' });
      const moved = await api.patch(`/api/rest/_webhooks/${ordered.id}`, { table: 'log_lines' });
      expect(moved.status).to.equal(400);
      expect(violationPaths(moved)).to.deep.equal(['ordering']);
      expect((await api.get(`/api/rest/_webhooks/${ordered.id}`)).body.webhook).to.include({ table: 'orders', ordering: 'row' });
      // …and moving it with "none" in the same PATCH is allowed.
      const both = await api.patch(`/api/rest/_webhooks/${ordered.id}`, { table: 'log_lines', ordering: 'none' });
      expect(both.status, JSON.stringify(both.body)).to.equal(200);
      expect(both.body.webhook).to.include({ table: 'log_lines', ordering: 'none' });
    });
  });

  describe('validation: each rule is a violation', () => {
    const cases: Array<[string, Record<string, unknown>, string]> = [
      ['http URL', { url: 'http://93.184.216.34/h' }, 'url'],
      ['not a URL', { url: 'nope' }, 'url'],
      ['credentials in the URL', { url: 'https://user:pw@93.184.216.34/h' }, 'url'],
      ['loopback', { url: 'https://127.0.0.1/h' }, 'url'],
      ['loopback v6', { url: 'https://[::1]/h' }, 'url'],
      ['localhost', { url: 'https://localhost/h' }, 'url'],
      ['RFC 1918', { url: 'https://10.1.2.3/h' }, 'url'],
      ['metadata', { url: 'https://169.254.169.254/latest' }, 'url'],
      ['IPv4-mapped loopback', { url: 'https://[::ffff:127.0.0.1]/h' }, 'url'],
      ['decimal IP', { url: 'https://2130706433/h' }, 'url'],
      ['hex IP', { url: 'https://0x7f.1/h' }, 'url'],
      ['unspecified', { url: 'https://0.0.0.0/h' }, 'url'],
      ['unspecified v6', { url: 'https://[::]/h' }, 'url'],
      ['octal IP', { url: 'https://0177.0.0.1/h' }, 'url'],
      ['RFC 1918 (172.16/12)', { url: 'https://172.20.1.1/h' }, 'url'],
      ['RFC 1918 (192.168/16)', { url: 'https://192.168.0.10/h' }, 'url'],
      ['carrier-grade NAT', { url: 'https://100.64.0.1/h' }, 'url'],
      ['IPv6 unique local', { url: 'https://[fd00::1]/h' }, 'url'],
      ['IPv6 link-local', { url: 'https://[fe80::1]/h' }, 'url'],
      ['IPv4-mapped metadata, hex spelling', { url: 'https://[::ffff:a9fe:a9fe]/h' }, 'url'],
      ['a name for loopback', { url: 'https://localhost./h' }, 'url'],
      ['IPv4-compatible loopback', { url: 'https://[::127.0.0.1]/h' }, 'url'],
      ['IPv4-compatible metadata', { url: 'https://[::a9fe:a9fe]/h' }, 'url'],
      ['NAT64 loopback', { url: 'https://[64:ff9b::7f00:1]/h' }, 'url'],
      ['6to4 loopback', { url: 'https://[2002:7f00:1::]/h' }, 'url'],
      ['filter key with SQL', { filter: { "status' OR '1'='1": 'x' } }, "filter.status' OR '1'='1"],
      // zod drops a `__proto__` key (so it cannot replace a prototype): left alone, the filter would be {} and match every row.
      ['__proto__ as a filter key', { filter: JSON.parse('{"__proto__": "paid"}') }, 'filter.__proto__'],
      ['select with a dotted name', { select: ['orders.id'] }, 'select.0'],
      ['a unicode table that does not exist', { table: 'ördérs' }, 'table'],
      ['empty events', { events: [] }, 'events'],
      ['unknown event', { events: ['INSERT', 'UPSERT'] }, 'events.1'],
      ['repeated event', { events: ['INSERT', 'INSERT'] }, 'events'],
      ['unknown table', { table: 'nope' }, 'table'],
      ['a view is not a table', { table: 'order_view' }, 'table'],
      ['SQL in the table name', { table: 'orders; DROP TABLE shop_master.orders' }, 'table'],
      ['filter on an unknown column', { filter: { nope: 1 } }, 'filter.nope'],
      ['filter with a value of another type than its column', { filter: { status: { $ne: 1 } } }, 'filter.status.$ne'],
      ['filter with an object that is no operator', { filter: { status: { eq: 'paid' } } }, 'filter.status.eq'],
      ['select an unknown column', { select: ['id', 'nope'] }, 'select.1'],
      ['empty select', { select: [] }, 'select'],
      ['repeated select', { select: ['id', 'id'] }, 'select'],
      ['short secret', { secret: 'too-short' }, 'secret'],
      ['unknown field', { filters: { status: 'paid' } }, ''],
      ['environment ≠ header', { environment: 'staging' }, 'environment'],
      ['projectId ≠ header', { projectId: 'other' }, 'projectId'],
      ['missing url', { url: undefined }, 'url'],
      ['active not a boolean', { active: 'yes' }, 'active'],
    ];
    for (const [name, change, path] of cases) {
      it(name, async () => {
        const res = await api.post('/api/rest/_webhooks', valid(change));
        expect(res.status, JSON.stringify(res.body)).to.equal(400);
        expect(res.body.error).to.equal('VALIDATION_ERROR');
        if (path) expect(violationPaths(res)).to.include(path);
        else expect(res.body.violations.length).to.be.at.least(1);
      });
    }

    it('names with quotes, dots and unicode are looked up exactly and quoted safely', async () => {
      const res = await api.post('/api/rest/_webhooks', valid({ table: "Odd.Table 'x'", events: ['INSERT'] }));
      expect(res.status, JSON.stringify(res.body)).to.equal(201);
      const col = await api.post('/api/rest/_webhooks', valid({ select: ['id', 'Weird "col" name'] }));
      expect(col.status, JSON.stringify(col.body)).to.equal(201);
      expect((await t.ctx.pool.query('SELECT count(*)::int AS n FROM shop_master.orders')).rows[0].n).to.equal(0);
    });

    it('private URLs are allowed when WEBHOOK_ALLOW_PRIVATE_NETWORKS=true', async () => {
      const t2 = await startTestApi({ env: { WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' } });
      try {
        await t2.provision({ projectId: 'shop', name: 'master' });
        await t2.ctx.pool.query('CREATE TABLE shop_master.orders (id int PRIMARY KEY)');
        const http = new HttpClient(t2.url, {
          authorization: `Bearer ${await t2.managementToken('shop')}`,
          'x-project-id': 'shop',
          environment: 'master',
        });
        const res = await http.post('/api/rest/_webhooks', valid({ url: 'https://127.0.0.1:8443/h' }));
        expect(res.status).to.equal(201);
      } finally {
        await t2.close();
      }
    });
  });

  describe('access', () => {
    it('a subscription of another environment or project is not found', async () => {
      const w = await create();
      expect((await api.with({ environment: 'staging' }).get(`/api/rest/_webhooks/${w.id}`)).status).to.equal(404);
      const otherToken = await t.managementToken('other');
      const other = new HttpClient(t.url, { authorization: `Bearer ${otherToken}`, 'x-project-id': 'other', environment: 'master' });
      expect((await other.get(`/api/rest/_webhooks/${w.id}`)).status).to.equal(404);
      expect((await other.get('/api/rest/_webhooks')).body.webhooks).to.deep.equal([]);
    });

    it('a revoked token is refused, and last use is recorded', async () => {
      const { createManagementToken, revokeManagementToken } = await import('../../src/webhooks/management-tokens.js');
      const { token: value, record } = await createManagementToken(t.ctx.pool, 'shop', 'short-lived');
      const http = api.with({ authorization: `Bearer ${value}` });
      expect((await http.get('/api/rest/_webhooks')).status).to.equal(200);
      const used = await t.ctx.pool.query('SELECT last_used_at FROM walgate.management_tokens WHERE id = $1', [record.id]);
      expect(used.rows[0].last_used_at).to.be.an.instanceOf(Date);
      await revokeManagementToken(t.ctx.pool, record.id, new Date());
      expect((await http.get('/api/rest/_webhooks')).status).to.equal(401);
    });

    it('limits each token: 429 with Retry-After past the limit', async () => {
      const t2 = await startTestApi({ overrides: { rateLimits: { management: { name: 'management', points: 3, durationSeconds: 60 } } } });
      try {
        await t2.provision({ projectId: 'shop', name: 'master' });
        const http = new HttpClient(t2.url, {
          authorization: `Bearer ${await t2.managementToken('shop')}`,
          'x-project-id': 'shop',
          environment: 'master',
        });
        const statuses = [];
        let last;
        for (let i = 0; i < 4; i++) statuses.push((last = await http.get('/api/rest/_webhooks')).status);
        expect(statuses).to.deep.equal([200, 200, 200, 429]);
        expect(Number(last!.headers.get('retry-after'))).to.be.within(1, 60);
        // Another token has its own budget.
        const fresh = http.with({ authorization: `Bearer ${await t2.managementToken('shop')}` });
        expect((await fresh.get('/api/rest/_webhooks')).status).to.equal(200);
      } finally {
        await t2.close();
      }
    });
  });
});
