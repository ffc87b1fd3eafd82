import { randomBytes } from 'node:crypto';
import { expect } from 'chai';
import { managementClient } from '../support/api.js';
import { AMQP_URL, NATS_URL, TestExchange, TestStream, uniqueName, withoutCredentials } from '../support/brokers.js';
import type { HttpClient } from '../support/http.js';
import { eventually, startPipeline, type Pipeline } from './support.js';

// `{key}` in a destination's subject (docs/destinations.md): each change of a row-ordered
// subscription is published on a subject that ends with its row's primary-key values, one token
// per key column, escaped so that no value adds, removes or wildcards a token; a subscription
// that cannot know one row's key is refused when it is saved, at the template's field.

const SECRET = `whsec_${randomBytes(24).toString('base64')}`;

describe('delivery: the {key} placeholder of a destination subject', function () {
  this.timeout(60_000);
  let p: Pipeline;
  let api: HttpClient;
  let nats: { name: string };

  const scope = { projectId: 'shop', environment: 'master' };
  const subscription = (extra: Record<string, unknown>) =>
    api.post('/api/rest/_webhooks', { ...scope, events: ['INSERT', 'UPDATE', 'DELETE'], secret: SECRET, ...extra });

  before(async () => {
    p = await startPipeline({ WEBHOOK_BREAKER_FAILURES: '1000' });
    api = await managementClient(p.t, 'shop');
    await p.writer.query('CREATE TABLE shop_master.stock (region text, sku text, qty int, PRIMARY KEY (region, sku))');
    const res = await api.post('/api/rest/_destinations', {
      ...scope,
      name: uniqueName('keyed').replaceAll('_', '-'),
      kind: 'nats',
      url: NATS_URL,
    });
    expect(res.status, JSON.stringify(res.body)).to.equal(201);
    nats = res.body.destination;
  });
  after(() => p?.close());

  it('NATS: each change arrives on its row key, a composite key one token per column, dots, wildcards and spaces escaped', async () => {
    const prefix = uniqueName('wgkey');
    const stream = await TestStream.create([`${prefix}.>`]);
    try {
      const subject = `${prefix}.{table}.{event}.{key}`;
      const res = await subscription({ table: 'stock', ordering: 'row', destination: { name: nats.name, subject } });
      expect(res.status, JSON.stringify(res.body)).to.equal(201);
      expect(res.body.webhook.destination).to.deep.equal({ name: nats.name, subject });
      const id = res.body.webhook.id as string;
      await p.writer.query(`INSERT INTO shop_master.stock VALUES ('eu', 'a1', 1), ('us.east', '*', 2), ('eu', 'x >y', 3), ('', '100%', 4)`);
      await p.writer.query(`UPDATE shop_master.stock SET qty = 9 WHERE region = 'eu' AND sku = 'a1'`);
      await p.writer.query(`DELETE FROM shop_master.stock WHERE region = 'us.east'`);
      await eventually(
        () => stream.count(),
        (n) => n >= 6,
        20_000,
      );
      const messages = await stream.messages();
      expect(messages.map((m) => m.subject).sort()).to.deep.equal(
        [
          `${prefix}.stock.INSERT.eu.a1`,
          `${prefix}.stock.INSERT.us%2Eeast.%2A`,
          `${prefix}.stock.INSERT.eu.x%20%3Ey`,
          `${prefix}.stock.INSERT.%00.100%25`,
          `${prefix}.stock.UPDATE.eu.a1`,
          `${prefix}.stock.DELETE.us%2Eeast.%2A`,
        ].sort(),
      );
      // Every subject has the same number of tokens: the template's, whatever the key held.
      for (const m of messages) expect(m.subject.split('.'), m.subject).to.have.length(5);
      const deliveries = await eventually(
        () => p.delivery(id),
        (d) => d.length === 6 && d.every((x) => x.status === 'delivered'),
      );
      expect(deliveries.every((d) => d.attempts === 1)).to.equal(true);
      await api.delete(`/api/rest/_webhooks/${id}`);
    } finally {
      await stream.close();
    }
  });

  it('RabbitMQ: a routing key the row key makes longer than 255 bytes fails the attempt and says so, never truncated', async () => {
    const exchange = await TestExchange.create();
    try {
      const mq = await api.post('/api/rest/_destinations', {
        ...scope,
        name: uniqueName('keymq').replaceAll('_', '-'),
        kind: 'rabbitmq',
        ...withoutCredentials(AMQP_URL),
      });
      expect(mq.status, JSON.stringify(mq.body)).to.equal(201);
      const res = await subscription({
        table: 'stock',
        events: ['INSERT'],
        ordering: 'row',
        retry: { delaysMs: [0] },
        destination: { name: mq.body.destination.name, exchange: exchange.exchange, routingKey: 'stock.{key}' },
      });
      expect(res.status, JSON.stringify(res.body)).to.equal(201);
      await p.writer.query(`INSERT INTO shop_master.stock VALUES ('eu', $1, 1)`, ['s'.repeat(300)]);
      const [dead] = await eventually(
        () => p.delivery(res.body.webhook.id),
        (d) => d.length === 1 && d[0]!.status === 'dead',
        20_000,
      );
      expect(dead).to.exist;
      const view = await api.get(`/api/rest/_webhooks/${res.body.webhook.id}`);
      expect(view.body.deliveries[0].lastError).to.match(
        /^RabbitMQ: the routing key must be at most 255 bytes once filled in .*the row's key is too long for it$/,
      );
      await api.delete(`/api/rest/_webhooks/${res.body.webhook.id}`);
    } finally {
      await exchange.close();
    }
  });

  it('{key} without ordering "row" (or with TRUNCATE, a batch, or a select without the key) is a 400 at the template field', async () => {
    const cases: Array<[Record<string, unknown>, string, RegExp]> = [
      [{ destination: { name: nats.name, subject: 'k.{key}' } }, 'destination.subject', /needs ordering "row"/],
      [{ ordering: { by: ['qty'] }, destination: { name: nats.name, subject: 'k.{key}' } }, 'destination.subject', /needs ordering "row"/],
      [
        { ordering: 'row', events: ['INSERT', 'TRUNCATE'], destination: { name: nats.name, subject: 'k.{key}' } },
        'destination.subject',
        /TRUNCATE has no row/,
      ],
      [{ ordering: 'row', batch: { maxEvents: 10 }, destination: { name: nats.name, subject: 'k.{key}' } }, 'destination.subject', /batch/],
      [
        { ordering: 'row', select: ['region', 'qty'], destination: { name: nats.name, subject: 'k.{key}' } },
        'destination.subject',
        /select must keep the key columns \(sku\)/,
      ],
    ];
    for (const [body, path, message] of cases) {
      const res = await subscription({ table: 'stock', ...body });
      expect(res.status, JSON.stringify(res.body)).to.equal(400);
      expect(res.body.error).to.equal('VALIDATION_ERROR');
      const v = (res.body.violations as Array<{ path: string; message: string }>).find((x) => x.path === path);
      expect(v, JSON.stringify(res.body)).to.exist;
      expect(v!.message)
        .to.match(/^names \{key\}, the row's primary key: /)
        .and.match(message);
    }
    // A PATCH that takes row ordering away from a subscription whose subject names {key} is refused the same way.
    const ok = await subscription({ table: 'stock', ordering: 'row', destination: { name: nats.name, subject: 'k.{key}' } });
    expect(ok.status, JSON.stringify(ok.body)).to.equal(201);
    const patched = await api.patch(`/api/rest/_webhooks/${ok.body.webhook.id}`, { ...scope, ordering: 'none' });
    expect(patched.status, JSON.stringify(patched.body)).to.equal(400);
    expect(patched.body.violations.map((v: { path: string }) => v.path)).to.include('destination.subject');
    const truncate = await api.patch(`/api/rest/_webhooks/${ok.body.webhook.id}`, { ...scope, events: ['INSERT', 'TRUNCATE'] });
    expect(truncate.status, JSON.stringify(truncate.body)).to.equal(400);
    expect(truncate.body.violations[0].message).to.match(/TRUNCATE has no row/);
    // A pause changes nothing the key depends on: it goes through.
    const paused = await api.patch(`/api/rest/_webhooks/${ok.body.webhook.id}`, { ...scope, active: false });
    expect(paused.status, JSON.stringify(paused.body)).to.equal(200);
    await api.delete(`/api/rest/_webhooks/${ok.body.webhook.id}`);
  });
});
