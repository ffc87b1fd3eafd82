import { randomBytes } from 'node:crypto';
import { expect } from 'chai';
import { Webhook } from 'standardwebhooks';
import { managementClient } from '../support/api.js';
import { walgate } from '../support/cli.js';
import { AMQP_URL, NATS_URL, TestExchange, TestStream, uniqueName, withoutCredentials } from '../support/brokers.js';
import type { HttpClient } from '../support/http.js';
import { eventually, startPipeline, type Pipeline } from './support.js';

// Broker destinations (docs/destinations.md) against the real brokers: NATS JetStream and
// RabbitMQ publish the POST's body with its headers, once per change, verifiable with a Standard
// Webhooks library, in row order; a missing stream or exchange, or refused credentials, is a
// failed attempt with a clear lastError that goes through retries like an HTTP failure.

const SECRET = `whsec_${randomBytes(24).toString('base64')}`;

/** Three rows, each inserted, updated twice and (two of them) deleted, interleaved, one transaction per change. */
async function writeChanges(p: Pipeline): Promise<Array<{ row: number; event: string }>> {
  const done: Array<{ row: number; event: string }> = [];
  for (const id of [1, 2, 3]) {
    await p.writer.query('INSERT INTO shop_master.orders (id, status, amount) VALUES ($1, $2, 1)', [id, 'new']);
    done.push({ row: id, event: 'INSERT' });
  }
  for (const status of ['paid', 'shipped']) {
    for (const id of [1, 2, 3]) {
      await p.writer.query('UPDATE shop_master.orders SET status = $2 WHERE id = $1', [id, status]);
      done.push({ row: id, event: 'UPDATE' });
    }
  }
  for (const id of [1, 3]) {
    await p.writer.query('DELETE FROM shop_master.orders WHERE id = $1', [id]);
    done.push({ row: id, event: 'DELETE' });
  }
  return done;
}

/** Per row, its events in the order they arrived. */
function perRow(messages: Array<{ body: string }>): Map<number, string[]> {
  const rows = new Map<number, string[]>();
  for (const m of messages) {
    const body = JSON.parse(m.body);
    const id = (body.record?.id ?? body.old_record?.id) as number;
    rows.set(id, [...(rows.get(id) ?? []), `${body.event}:${body.record?.status ?? ''}`]);
  }
  return rows;
}

const EXPECTED_ROWS = new Map([
  [1, ['INSERT:new', 'UPDATE:paid', 'UPDATE:shipped', 'DELETE:shipped']],
  [2, ['INSERT:new', 'UPDATE:paid', 'UPDATE:shipped']],
  [3, ['INSERT:new', 'UPDATE:paid', 'UPDATE:shipped', 'DELETE:shipped']],
]);

describe('delivery: NATS JetStream and RabbitMQ destinations', function () {
  this.timeout(60_000);
  let p: Pipeline;
  let api: HttpClient;

  before(async () => {
    p = await startPipeline({ WEBHOOK_BREAKER_FAILURES: '1000' });
    api = await managementClient(p.t, 'shop');
  });
  after(() => p?.close());

  const scope = { projectId: 'shop', environment: 'master' };
  const createDestination = async (body: Record<string, unknown>) => {
    const res = await api.post('/api/rest/_destinations', { ...scope, ...body });
    expect(res.status, JSON.stringify(res.body)).to.equal(201);
    return res.body.destination as { id: string; name: string };
  };
  const subscribe = async (destination: Record<string, string>, extra: Record<string, unknown> = {}) => {
    const res = await api.post('/api/rest/_webhooks', {
      ...scope,
      table: 'orders',
      events: ['INSERT', 'UPDATE', 'DELETE'],
      destination,
      secret: SECRET,
      ...extra,
    });
    expect(res.status, JSON.stringify(res.body)).to.equal(201);
    return res.body.webhook as { id: string; url: string | null; destination: Record<string, string> };
  };
  const lastErrors = async (webhookId: string) =>
    (await api.get(`/api/rest/_webhooks/${webhookId}`)).body.deliveries.map((d: any) => d.lastError);
  const finish = async (webhookId: string) => {
    await api.delete(`/api/rest/_webhooks/${webhookId}`);
    await p.writer.query('TRUNCATE shop_master.orders');
  };

  it('NATS: every change published once with Nats-Msg-Id = event id, signed as the POST, in row order', async () => {
    const prefix = uniqueName('wg');
    const stream = await TestStream.create([`${prefix}.>`]);
    try {
      const nats = await createDestination({ name: uniqueName('nats').replaceAll('_', '-'), kind: 'nats', url: NATS_URL });
      const w = await subscribe({ name: nats.name, subject: `${prefix}.{schema}.{table}.{event}` }, { ordering: 'row' });
      expect(w.url).to.equal(null);
      expect(w.destination).to.deep.equal({ name: nats.name, subject: `${prefix}.{schema}.{table}.{event}` });
      const written = await writeChanges(p);
      await eventually(
        () => stream.count(),
        (n) => n >= written.length,
        20_000,
      );
      const messages = await stream.messages();
      expect(messages).to.have.length(written.length);
      const verifier = new Webhook(SECRET);
      const ids = new Set<string>();
      for (const m of messages) {
        const body = JSON.parse(m.body);
        expect(m.headers['Nats-Msg-Id'], 'the duplicate window keys on the event id').to.equal(body.id);
        expect(m.headers['webhook-id']).to.equal(body.id);
        expect(m.headers['x-service-delivery']).to.equal(body.id);
        expect(m.headers['x-service-event']).to.equal(body.event);
        expect(m.headers['content-type']).to.equal('application/json');
        expect(m.subject).to.equal(`${prefix}.shop_master.orders.${body.event}`);
        // A Standard Webhooks library verifies the message as it would the POST.
        expect(verifier.verify(m.body, m.headers)).to.deep.equal(body);
        ids.add(body.id);
      }
      expect(ids.size, 'each change published once').to.equal(written.length);
      expect(perRow(messages)).to.deep.equal(EXPECTED_ROWS);
      const deliveries = await eventually(
        () => p.delivery(w.id),
        (d) => d.length === written.length && d.every((x) => x.status === 'delivered'),
      );
      expect(deliveries.every((d) => d.attempts === 1)).to.equal(true);
      // An ack has no HTTP status: the figures count it delivered, not failed.
      const minutes = (await api.get(`/api/rest/_webhooks/${w.id}/minutes`)).body.minutes as Array<{ delivered: number; failed: number }>;
      expect(minutes.reduce((n, m) => n + m.failed, 0)).to.equal(0);
      expect(minutes.reduce((n, m) => n + m.delivered, 0)).to.equal(written.length);
      await finish(w.id);
    } finally {
      await stream.close();
    }
  });

  it('NATS: a subject no stream stores is a failed attempt that says so, retried, dead, and a problem until the stream exists', async () => {
    const nats = await createDestination({ name: uniqueName('nostream').replaceAll('_', '-'), kind: 'nats', url: NATS_URL });
    const prefix = uniqueName('nobody');
    const w = await subscribe({ name: nats.name, subject: `${prefix}.{table}` });
    await p.writer.query("INSERT INTO shop_master.orders (id, status) VALUES (10, 'new')");
    const [dead] = await eventually(
      () => p.delivery(w.id),
      (d) => d.length === 1 && d[0]!.status === 'dead',
      20_000,
    );
    expect(dead!.attempts, 'the schedule is spent, as for HTTP').to.equal(5);
    const [error] = await lastErrors(w.id);
    expect(error).to.equal(`NATS: no JetStream stream stores subject "${prefix}.orders" (or JetStream is not enabled)`);
    const view = (await api.get(`/api/rest/_webhooks/${w.id}`)).body.webhook;
    expect(view.problems.map((x: { code: string }) => x.code)).to.deep.equal(['DESTINATION_TARGET_MISSING']);
    expect(view.state).to.equal('failing');
    // The stream created, the dead letter replayed: delivered, and the problem is gone.
    const stream = await TestStream.create([`${prefix}.>`]);
    try {
      expect((await api.post(`/api/rest/_webhooks/${w.id}/replay`, {})).status).to.equal(202);
      await eventually(
        () => stream.count(),
        (n) => n === 1,
        20_000,
      );
      await eventually(
        () => p.delivery(w.id),
        (d) => d[0]!.status === 'delivered',
      );
      const healed = (await api.get(`/api/rest/_webhooks/${w.id}`)).body.webhook;
      expect(healed.problems).to.deep.equal([]);
      expect(healed.state).to.equal('healthy');
      // The replayed attempt was acknowledged, not failed: the figures count the five failures only.
      const minutes = (await api.get(`/api/rest/_webhooks/${w.id}/minutes`)).body.minutes as Array<{ failed: number }>;
      expect(minutes.reduce((n, m) => n + m.failed, 0)).to.equal(5);
    } finally {
      await stream.close();
    }
    await finish(w.id);
  });

  it('RabbitMQ: every change published once, persistent, message-id = event id, confirmed, in row order', async () => {
    const exchange = await TestExchange.create();
    try {
      const rabbit = await createDestination({
        name: uniqueName('rabbit').replaceAll('_', '-'),
        kind: 'rabbitmq',
        ...withoutCredentials(AMQP_URL),
      });
      const w = await subscribe(
        { name: rabbit.name, exchange: exchange.exchange, routingKey: '{schema}.{table}.{event}' },
        { ordering: 'row' },
      );
      const written = await writeChanges(p);
      await eventually(
        async () => exchange.received.length,
        (n) => n >= written.length,
        20_000,
      );
      const verifier = new Webhook(SECRET);
      const ids = new Set<string>();
      for (const m of exchange.received) {
        const body = JSON.parse(m.body);
        expect(m.messageId).to.equal(body.id);
        expect(m.persistent).to.equal(true);
        expect(m.routingKey).to.equal(`shop_master.orders.${body.event}`);
        expect(m.headers['x-service-event']).to.equal(body.event);
        expect(verifier.verify(m.body, m.headers)).to.deep.equal(body);
        ids.add(body.id);
      }
      expect(ids.size).to.equal(written.length);
      expect(exchange.received).to.have.length(written.length);
      expect(perRow(exchange.received)).to.deep.equal(EXPECTED_ROWS);
      await eventually(
        () => p.delivery(w.id),
        (d) => d.length === written.length && d.every((x) => x.status === 'delivered'),
      );
      await finish(w.id);
    } finally {
      await exchange.close();
    }
  });

  it('RabbitMQ: a missing exchange, and refused credentials, are failed attempts with a clear lastError (never the password); PATCHed credentials take effect', async () => {
    const rabbit = await createDestination({
      name: uniqueName('noexchange').replaceAll('_', '-'),
      kind: 'rabbitmq',
      ...withoutCredentials(AMQP_URL),
    });
    const missing = uniqueName('missing');
    const w = await subscribe({ name: rabbit.name, exchange: missing, routingKey: '{table}' });
    const password = `not-the-password-${randomBytes(4).toString('hex')}`;
    const refused = await createDestination({
      name: uniqueName('refused').replaceAll('_', '-'),
      kind: 'rabbitmq',
      url: withoutCredentials(AMQP_URL).url,
      username: 'guest',
      password,
    });
    const exchange = await TestExchange.create();
    try {
      const w2 = await subscribe({ name: refused.name, exchange: exchange.exchange, routingKey: '{table}' });
      await p.writer.query("INSERT INTO shop_master.orders (id, status) VALUES (20, 'new')");
      for (const id of [w.id, w2.id])
        await eventually(
          () => p.delivery(id),
          (d) => d.length === 1 && d[0]!.status === 'dead',
          20_000,
        );
      expect(await lastErrors(w.id)).to.deep.equal([`RabbitMQ: no exchange '${missing}' in vhost '/'`]);
      expect(await lastErrors(w2.id)).to.deep.equal(['RabbitMQ: the server refused the credentials']);
      const attempts = (await p.delivery(w2.id))[0]!.attempt_log as Array<{ error: string }>;
      expect(JSON.stringify(attempts)).not.to.include(password);
      // The right password PATCHed in, the dead letter replayed: the tailer connects with it.
      const { username = 'guest', password: right = 'guest' } = withoutCredentials(AMQP_URL);
      const patched = await api.patch(`/api/rest/_destinations/${refused.id}`, { username, password: right });
      expect(patched.status, JSON.stringify(patched.body)).to.equal(200);
      expect((await api.post(`/api/rest/_webhooks/${w2.id}/replay`, {})).status).to.equal(202);
      await eventually(
        () => p.delivery(w2.id),
        (d) => d[0]!.status === 'delivered',
        20_000,
      );
      expect(exchange.received.map((m) => JSON.parse(m.body).record.id)).to.deep.equal([20]);
      await finish(w.id);
      await finish(w2.id);
    } finally {
      await exchange.close();
    }
  });

  it('management: 400 naming the field, 404, 409 naming the subscriptions; credentials never returned', async () => {
    const bad = async (path: string, body: Record<string, unknown>, field: string) => {
      const res = await api.post(path, { ...scope, ...body });
      expect(res.status, JSON.stringify(res.body)).to.equal(400);
      expect(res.body.error).to.equal('VALIDATION_ERROR');
      expect(
        res.body.violations.map((v: { path: string }) => v.path),
        JSON.stringify(res.body),
      ).to.include(field);
    };
    await bad('/api/rest/_destinations', { name: 'x', kind: 'kafka', url: 'kafka://127.0.0.1:9092' }, 'kind');
    await bad('/api/rest/_destinations', { name: 'x', kind: 'nats', url: 'amqp://127.0.0.1:5672/' }, 'url');
    await bad('/api/rest/_destinations', { name: 'x', kind: 'rabbitmq', url: 'amqp://guest:guest@127.0.0.1:5672/' }, 'url');
    await bad('/api/rest/_destinations', { name: 'Not A Name', kind: 'nats', url: NATS_URL }, 'name');
    await bad('/api/rest/_destinations', { name: 'x', kind: 'rabbitmq', url: 'amqp://127.0.0.1:5672/', token: 'abcdef' }, 'token');
    const name = uniqueName('mgmt').replaceAll('_', '-');
    const created = await api.post('/api/rest/_destinations', {
      ...scope,
      name,
      kind: 'nats',
      url: NATS_URL,
      username: 'svc',
      password: 's3cret-value',
    });
    expect(created.status).to.equal(201);
    expect(JSON.stringify(created.body)).not.to.include('s3cret-value');
    expect(created.body.destination.credentials).to.deep.equal({ username: true, password: true, token: false });
    await bad('/api/rest/_destinations', { name, kind: 'nats', url: NATS_URL }, 'name');
    // The operator's view of the same: which credentials are set, never their values.
    const listed = await walgate(p.t, ['destinations', 'list', '--project', 'shop']);
    expect(listed.code, listed.stderr).to.equal(0);
    expect(listed.stdout).to.contain(name).and.to.contain('username, password');
    expect(listed.stdout).not.to.contain('s3cret-value');

    const hook = { table: 'orders', events: ['INSERT'], secret: SECRET };
    await bad('/api/rest/_webhooks', { ...hook, destination: { name, subject: 'a.{tabel}' } }, 'destination.subject');
    await bad('/api/rest/_webhooks', { ...hook, destination: { name, subject: 'a.*.{table}' } }, 'destination.subject');
    await bad('/api/rest/_webhooks', { ...hook, destination: { name, subject: 'a..b' } }, 'destination.subject');
    await bad('/api/rest/_webhooks', { ...hook, destination: { name, exchange: 'x', routingKey: 'k' } }, 'destination');
    await bad('/api/rest/_webhooks', { ...hook, destination: { name: 'nope', subject: 'a' } }, 'destination.name');
    await bad('/api/rest/_webhooks', { ...hook, url: 'https://example.com/h', destination: { name, subject: 'a' } }, 'destination');
    await bad('/api/rest/_webhooks', hook, 'url');

    const id = created.body.destination.id as string;
    expect((await api.get('/api/rest/_destinations/dst_nope')).body.error).to.equal('DESTINATION_NOT_FOUND');
    const w = await subscribe({ name, subject: 'walgate.{table}.{event}' });
    const conflict = await api.delete(`/api/rest/_destinations/${id}`);
    expect(conflict.status).to.equal(409);
    expect(conflict.body).to.deep.include({ error: 'DESTINATION_IN_USE', subscriptions: [w.id] });
    expect((await api.get(`/api/rest/_destinations/${id}`)).body.subscriptions).to.deep.equal([w.id]);
    const patched = await api.patch(`/api/rest/_destinations/${id}`, { password: null, username: null, token: 'tok-123456' });
    expect(patched.body.destination.credentials).to.deep.equal({ username: false, password: false, token: true });
    await api.delete(`/api/rest/_webhooks/${w.id}`);
    expect((await api.delete(`/api/rest/_destinations/${id}`)).status).to.equal(204);
  });

  it('PATCH moves a subscription between a URL and a destination, and fills the templates in again for another table', async () => {
    await p.writer.query('CREATE TABLE IF NOT EXISTS shop_master.invoices (id int PRIMARY KEY)');
    const name = uniqueName('patch').replaceAll('_', '-');
    await createDestination({ name, kind: 'nats', url: NATS_URL });
    const created = await api.post('/api/rest/_webhooks', {
      ...scope,
      table: 'orders',
      events: ['INSERT'],
      url: 'https://127.0.0.1:9/h',
      secret: SECRET,
    });
    expect(created.status, JSON.stringify(created.body)).to.equal(201);
    const id = created.body.webhook.id as string;
    const stored = async () => (await p.t.ctx.pool.query('SELECT url, destination_id FROM walgate.webhooks WHERE id = $1', [id])).rows[0];

    const toDestination = await api.patch(`/api/rest/_webhooks/${id}`, { destination: { name, subject: 'w.{table}.{event}' } });
    expect(toDestination.status, JSON.stringify(toDestination.body)).to.equal(200);
    expect(toDestination.body.webhook).to.deep.include({ url: null, destination: { name, subject: 'w.{table}.{event}' } });
    expect((await stored()).url).to.match(/^walgate-nats:\/\/dst_[0-9a-f]+\/w\.orders\.%7Bevent%7D$/);

    const moved = await api.patch(`/api/rest/_webhooks/${id}`, { table: 'invoices' });
    expect(moved.status, JSON.stringify(moved.body)).to.equal(200);
    expect(moved.body.webhook.destination).to.deep.equal({ name, subject: 'w.{table}.{event}' });
    expect((await stored()).url).to.match(/\/w\.invoices\.%7Bevent%7D$/);

    const both = await api.patch(`/api/rest/_webhooks/${id}`, { url: 'https://127.0.0.1:9/h', destination: { name, subject: 'a' } });
    expect(both.status).to.equal(400);
    expect(both.body.violations.map((v: { path: string }) => v.path)).to.include('destination');

    const toUrl = await api.patch(`/api/rest/_webhooks/${id}`, { url: 'https://127.0.0.1:9/h' });
    expect(toUrl.body.webhook).to.deep.include({ url: 'https://127.0.0.1:9/h', destination: null });
    expect(await stored()).to.deep.equal({ url: 'https://127.0.0.1:9/h', destination_id: null });
    await api.delete(`/api/rest/_webhooks/${id}`);
  });
});
