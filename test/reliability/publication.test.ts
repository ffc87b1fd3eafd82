// No delivery worker or tailer runs in this file: the public address below is only validated,
// never contacted.
import { expect } from 'chai';
import pg from 'pg';
import { startTestApi, type TestApi } from '../support/api.js';
import { HttpClient } from '../support/http.js';

const URL_ = 'https://93.184.216.34/hooks';
const SECRET = 'whsec-super-secret-value-0001';

// Which tables the tailer reads is decided by the subscriptions that name them. Concurrent changes
// of subscriptions, and a table busy with a long transaction, must neither leave a subscribed table
// unread nor hang the request.
describe('reliability: the publication under concurrent subscription changes', function () {
  this.timeout(30_000);
  let t: TestApi;
  let api: HttpClient;
  let other: pg.Client;

  before(async () => {
    t = await startTestApi();
    await t.provision({ projectId: 'shop', name: 'master' });
    await t.ctx.pool.query(
      'CREATE TABLE shop_master.orders (id int PRIMARY KEY, status text); CREATE TABLE shop_master.busy (id int PRIMARY KEY); CREATE TABLE shop_master.reports (id int PRIMARY KEY)',
    );
    api = new HttpClient(t.url, {
      authorization: `Bearer ${await t.managementToken('shop')}`,
      'x-project-id': 'shop',
      environment: 'master',
    });
    other = new pg.Client({ connectionString: t.database.url });
    await other.connect();
  });
  after(async () => {
    await other?.end();
    await t?.close();
  });

  const published = async (table: string) =>
    ((
      await t.ctx.pool.query(
        `SELECT 1 FROM pg_publication_tables WHERE pubname = 'walgate' AND schemaname = 'shop_master' AND tablename = $1`,
        [table],
      )
    ).rowCount ?? 0) > 0;
  const create = async (table: string) => {
    const res = await api.post('/api/rest/_webhooks', {
      projectId: 'shop',
      environment: 'master',
      table,
      events: ['INSERT'],
      url: URL_,
      secret: SECRET,
    });
    expect(res.status, JSON.stringify(res.body)).to.equal(201);
    return res.body.webhook.id as string;
  };

  it('deleting the last subscription of a table while another is being created on it keeps the table watched', async () => {
    const last = await create('orders');
    // A subscription on the same table, being created: its row written, the publication lock
    // held, not yet committed (as POST /_webhooks does inside its transaction).
    await other.query('BEGIN');
    await other.query(
      `INSERT INTO walgate.webhooks (id, project_id, environment, schema_name, table_name, events, url, secret)
       VALUES ('wh_in_flight', 'shop', 'master', 'shop_master', 'orders', '{INSERT}', $1, '\\x00')`,
      [URL_],
    );
    await other.query(`SELECT pg_advisory_xact_lock(hashtext('walgate-publication'))`);
    const deleting = api.delete(`/api/rest/_webhooks/${last}`);
    await new Promise((r) => setTimeout(r, 300)); // the DELETE waits for the lock
    await other.query('COMMIT');
    const deleted = await deleting;
    expect(deleted.status, JSON.stringify(deleted.body)).to.equal(204);
    expect(await published('orders'), 'a table with a subscription is in the publication').to.equal(true);
    await api.delete('/api/rest/_webhooks/wh_in_flight');
    expect(await published('orders'), 'and leaves it with its last subscription').to.equal(false);
  });

  it('concurrent deletes and table changes leave exactly the subscribed tables watched', async () => {
    const ids = await Promise.all([create('orders'), create('orders'), create('busy'), create('busy')]);
    await Promise.all([
      api.delete(`/api/rest/_webhooks/${ids[0]}`),
      api.delete(`/api/rest/_webhooks/${ids[1]}`),
      api.patch(`/api/rest/_webhooks/${ids[2]}`, { table: 'orders' }),
    ]);
    expect(await published('orders')).to.equal(true); // ids[2] moved there
    expect(await published('busy')).to.equal(true); // ids[3] stays
    await Promise.all([api.delete(`/api/rest/_webhooks/${ids[2]}`), api.delete(`/api/rest/_webhooks/${ids[3]}`)]);
    expect(await published('orders')).to.equal(false);
    expect(await published('busy')).to.equal(false);
  });

  it('a table held by a long transaction: 503 SERVICE_UNAVAILABLE with Retry-After within seconds, then it works', async () => {
    await other.query('BEGIN');
    await other.query('SELECT * FROM shop_master.reports'); // a long report: ALTER TABLE waits for its lock
    const started = Date.now();
    const res = await api.post('/api/rest/_webhooks', {
      projectId: 'shop',
      environment: 'master',
      table: 'reports',
      events: ['INSERT'],
      url: URL_,
      secret: SECRET,
    });
    expect(res.status).to.equal(503);
    expect(res.body.error).to.equal('SERVICE_UNAVAILABLE');
    expect(res.headers.get('retry-after')).to.equal('5');
    expect(Date.now() - started).to.be.below(6000);
    expect((await t.ctx.pool.query(`SELECT 1 FROM walgate.webhooks WHERE table_name = 'reports'`)).rowCount, 'nothing saved').to.equal(0);
    await other.query('COMMIT');
    const id = await create('reports');
    expect(await published('reports')).to.equal(true);
    await api.delete(`/api/rest/_webhooks/${id}`);
  });

  it('deleting the last subscription of a table another session holds: 503 with Retry-After within seconds, the subscription kept', async () => {
    const id = await create('reports');
    // SHARE mode stands for CREATE INDEX, VACUUM, ANALYZE or a LOCK TABLE by someone else:
    // taking the table out of the publication (ALTER PUBLICATION … DROP TABLE) waits for it.
    await other.query('BEGIN');
    await other.query('LOCK TABLE shop_master.reports IN SHARE MODE');
    try {
      const started = Date.now();
      const res = await api.delete(`/api/rest/_webhooks/${id}`, { timeoutMs: 15_000 });
      expect(res.status, res.text).to.equal(503);
      expect(res.body.error).to.equal('SERVICE_UNAVAILABLE');
      expect(res.headers.get('retry-after')).to.equal('5');
      expect(Date.now() - started).to.be.below(6000);
      // The subscription row is not left locked either: a PATCH of it answers at once.
      expect((await api.patch(`/api/rest/_webhooks/${id}`, { active: false }, { timeoutMs: 5000 })).status).to.equal(200);
    } finally {
      await other.query('ROLLBACK');
    }
    expect((await api.get(`/api/rest/_webhooks/${id}`)).status, 'nothing was deleted').to.equal(200);
    expect(await published('reports')).to.equal(true);
    expect((await api.delete(`/api/rest/_webhooks/${id}`)).status).to.equal(204);
    expect(await published('reports')).to.equal(false);
  });
});
