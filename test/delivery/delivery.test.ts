import { createHmac, randomBytes } from 'node:crypto';
import { expect } from 'chai';
import { Webhook } from 'standardwebhooks';
import { VERSION } from '../../src/core/version.js';
import { eventually, startPipeline, type Pipeline } from './support.js';

const SECRET = `whsec_${randomBytes(24).toString('base64')}`;

describe('delivery: WAL change → signed HTTPS POST, end to end', function () {
  this.timeout(30_000);
  let p: Pipeline;
  before(async () => {
    p = await startPipeline();
  });
  after(() => p?.close());
  beforeEach(async () => {
    await p.removeSubscriptions();
    p.receiver.requests.length = 0;
    p.receiver.behave = () => ({ status: 200 });
  });

  it('delivers INSERT, UPDATE and DELETE written by a plain client, with the seed headers and both signatures', async () => {
    const wh = await p.subscribe({ secret: SECRET });
    await p.writer.query(`INSERT INTO shop_master.orders VALUES (1, 'new', 10.50)`);
    await p.writer.query(`UPDATE shop_master.orders SET status = 'paid' WHERE id = 1`);
    await p.writer.query(`DELETE FROM shop_master.orders WHERE id = 1`);
    // Deliveries run concurrently: no order is promised, ids (WAL positions) sort them.
    const requests = [...(await p.receiver.waitFor(3))].sort((a, b) => (JSON.parse(a.body).id < JSON.parse(b.body).id ? -1 : 1));
    const standard = new Webhook(SECRET.slice('whsec_'.length));
    const kinds = [];
    for (const r of requests) {
      const body = JSON.parse(r.body);
      kinds.push(body.event);
      expect(r.method).to.equal('POST');
      expect(r.path).to.equal('/hook');
      expect(r.headers['content-type']).to.equal('application/json');
      expect(r.headers['user-agent']).to.equal(`walgate/${VERSION}`);
      expect(r.headers['x-service-event']).to.equal(body.event);
      expect(r.headers['x-service-delivery']).to.equal(body.id);
      const hex = createHmac('sha256', SECRET).update(r.body, 'utf8').digest('hex');
      expect(r.headers['x-service-signature']).to.equal(`sha256=${hex}`);
      expect(r.headers['x-webhook-signature']).to.equal(hex);
      expect(r.headers['webhook-id']).to.equal(body.id);
      expect(() => standard.verify(r.body, r.headers)).not.to.throw();
      expect(() => new Webhook(randomBytes(24).toString('base64')).verify(r.body, r.headers)).to.throw();
      expect(body).to.include.keys(
        'id',
        'timestamp',
        'project_id',
        'environment',
        'table',
        'event',
        'record',
        'data',
        'changed_fields',
        'old_record',
      );
    }
    expect(kinds).to.deep.equal(['INSERT', 'UPDATE', 'DELETE']);
    expect(JSON.parse(requests[1]!.body)).to.deep.include({ changed_fields: ['status'], record: { id: 1, status: 'paid', amount: 10.5 } });
    expect(requests[0]!.body).to.contain('"amount":10.50');
    const rows = await eventually(
      () => p.delivery(wh),
      (r) => r.every((d) => d.status === 'delivered'),
    );
    for (const d of rows) {
      expect(d).to.include({ status: 'delivered', attempts: 1, http_status: 200, last_error: null });
      expect(d.delivered_at).to.be.an.instanceOf(Date);
    }
  });

  it('signs with the secret as UTF-8 bytes when it has no whsec_ prefix, and a PATCHed secret applies next time', async () => {
    const plain = 'plain-secret-with-no-prefix';
    const wh = await p.subscribe({ secret: plain });
    await p.writer.query(`INSERT INTO shop_master.orders VALUES (2, 'new', 1)`);
    const [r] = await p.receiver.waitFor(1);
    expect(r!.headers['x-webhook-signature']).to.equal(createHmac('sha256', plain).update(r!.body).digest('hex'));
    const mac = createHmac('sha256', plain)
      .update(`${r!.headers['webhook-id']}.${r!.headers['webhook-timestamp']}.${r!.body}`)
      .digest('base64');
    expect(r!.headers['webhook-signature']).to.equal(`v1,${mac}`);
    const { sealWebhookSecret } = await import('../../src/delivery/secret.js');
    await p.t.ctx.pool.query('UPDATE walgate.webhooks SET secret = $2 WHERE id = $1', [
      wh,
      sealWebhookSecret(p.t.ctx.secrets, 'the-rotated-secret-value'),
    ]);
    await p.writer.query(`INSERT INTO shop_master.orders VALUES (3, 'new', 1)`);
    const [, r2] = await p.receiver.waitFor(2);
    expect(r2!.headers['x-webhook-signature']).to.equal(createHmac('sha256', 'the-rotated-secret-value').update(r2!.body).digest('hex'));
  });

  it('records rendered exactly as to_jsonb(row) reach the receiver', async () => {
    await p.writer.query(
      `CREATE TABLE IF NOT EXISTS shop_master.rich (id int PRIMARY KEY, big numeric(40,20), huge bigint, at timestamptz, doc jsonb, tags text[], raw bytea, nothing text)`,
    );
    await p.subscribe({ table: 'rich' });
    await p.writer.query(
      `INSERT INTO shop_master.rich VALUES (1, 12345678901234567890.12345678901234567890, 9007199254740993, '2024-05-06 07:08:09.123456+02',
        '{"n": 1.50, "deep": [1, {"x": null}]}', '{a,"b c"}', '\\xdeadbeef', NULL)`,
    );
    const [r] = await p.receiver.waitFor(1);
    const { rows } = await p.t.ctx.pool.query(
      `SELECT ($1::jsonb -> 'record')::text AS got, (SELECT to_jsonb(x)::text FROM shop_master.rich x WHERE id = 1) AS want`,
      [r!.body],
    );
    expect(rows[0].got).to.equal(rows[0].want);
  });
});
