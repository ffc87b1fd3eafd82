import { execFile } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { managementClient } from '../support/api.js';
import { AMQP_URL, OwnNatsServer, TestExchange, TestStream, uniqueName, withoutCredentials } from '../support/brokers.js';
import { eventually, startPipeline, type Pipeline } from './support.js';

// A NATS server killed under load and started again a few seconds later, and a RabbitMQ
// connection closed by the broker under load: every change arrives (NATS: exactly once, as a
// publish whose ack was lost is sent again and JetStream drops it by its Nats-Msg-Id; RabbitMQ: a
// repeat carries its change's message-id), each row's changes in commit order, every delivery
// delivered — through the same retries and breaker as an HTTPS receiver that went away.

const ROWS = 20;
const ROUNDS = 5;

/** Closes, on the broker, the connections whose client named itself `name` (rabbitmqctl on this machine). */
async function closeRabbitMqConnections(name: string): Promise<number> {
  const run = promisify(execFile);
  // The plain format: `close_connection` takes the pid as printed here (`<rabbit@host.….0>`), not as JSON prints it.
  const { stdout } = await run('rabbitmqctl', ['list_connections', 'pid', 'client_properties', '-q']);
  const ours = stdout
    .split('\n')
    .filter((line) => line.includes(`{"connection_name","${name}"}`))
    .map((line) => line.split('\t')[0]!);
  for (const pid of ours) await run('rabbitmqctl', ['close_connection', pid, 'walgate test: connection killed under load']);
  return ours.length;
}

describe('delivery: a broker destination that goes away under load', function () {
  this.timeout(90_000);
  let p: Pipeline;
  let server: OwnNatsServer;
  let stream: TestStream;

  before(async () => {
    p = await startPipeline({
      WEBHOOK_RETRY_DELAYS_MS: '0,500,1000,2000,4000,8000',
      WEBHOOK_BREAKER_FAILURES: '5',
      WEBHOOK_BREAKER_COOLDOWN_MS: '1000',
    });
    server = await OwnNatsServer.start();
  });
  after(async () => {
    await stream?.close();
    await p?.close();
    await server?.close();
  });

  it('nothing lost, nothing stored twice, row order kept; retries and the breaker as for HTTP', async () => {
    const prefix = uniqueName('outage');
    stream = await TestStream.create([`${prefix}.>`], { natsUrl: server.url, storage: 'file' });
    const api = await managementClient(p.t, 'shop');
    const scope = { projectId: 'shop', environment: 'master' };
    const name = uniqueName('own').replaceAll('_', '-');
    expect((await api.post('/api/rest/_destinations', { ...scope, name, kind: 'nats', url: server.url })).status).to.equal(201);
    const created = await api.post('/api/rest/_webhooks', {
      ...scope,
      table: 'orders',
      events: ['INSERT', 'UPDATE'],
      destination: { name, subject: `${prefix}.{table}.{event}` },
      secret: 'whsec_b3V0YWdlLXRlc3Qtc2VjcmV0LTAwMDE=',
      ordering: 'row',
    });
    expect(created.status, JSON.stringify(created.body)).to.equal(201);
    const webhookId = created.body.webhook.id as string;

    const round = async (r: number) => {
      for (let id = 1; id <= ROWS; id++) {
        if (r === 0) await p.writer.query('INSERT INTO shop_master.orders (id, status, amount) VALUES ($1, $2, 0)', [id, 'v0']);
        else await p.writer.query('UPDATE shop_master.orders SET status = $2 WHERE id = $1', [id, `v${r}`]);
      }
    };
    await round(0);
    await round(1);
    await server.stop(); // under load: the first rounds' publishes are in flight
    await round(2);
    await round(3);
    await sleep(3000);
    await server.resume();
    await round(4);

    const total = ROWS * ROUNDS;
    const deliveries = await eventually(
      () => p.delivery(webhookId),
      (d) => d.length === total && d.every((x) => x.status === 'delivered'),
      60_000,
    );
    const messages = await stream.messages();
    const ids = messages.map((m) => JSON.parse(m.body).id as string);
    expect(new Set(ids).size, 'every change is in the stream').to.equal(total);
    expect(messages, 'none twice (JetStream dropped the repeats by Nats-Msg-Id)').to.have.length(total);
    for (const m of messages) expect(m.headers['Nats-Msg-Id']).to.equal(JSON.parse(m.body).id);
    const versions = new Map<number, string[]>();
    for (const m of messages) {
      const body = JSON.parse(m.body);
      versions.set(body.record.id, [...(versions.get(body.record.id) ?? []), body.record.status]);
    }
    for (let id = 1; id <= ROWS; id++) expect(versions.get(id), `row ${id}`).to.deep.equal(['v0', 'v1', 'v2', 'v3', 'v4']);
    // The outage went through the same machinery as an HTTP one: failed attempts retried.
    const failed = deliveries
      .flatMap((d) => (d.attempt_log ?? []) as Array<{ kind: string; error: string | null }>)
      .filter((a) => a.kind === 'request' && a.error);
    expect(failed.length, 'attempts failed while the server was down').to.be.greaterThan(0);
    expect(failed.every((a) => a.error!.startsWith('NATS: '))).to.equal(true);
    const breaker = await p.t.ctx.pool.query(
      'SELECT b.consecutive_failures FROM walgate.endpoint_breakers b JOIN walgate.webhooks w ON w.url = b.url WHERE w.id = $1',
      [webhookId],
    );
    expect(breaker.rows[0]?.consecutive_failures ?? 0, 'closed again').to.equal(0);
  });
  it('RabbitMQ: the connection killed under load — every change queued, row order kept, repeats share their message-id', async function () {
    if (process.env.AMQP_URL) this.skip(); // rabbitmqctl reaches only the local broker
    await p.removeSubscriptions();
    await p.writer.query('TRUNCATE shop_master.orders');
    const exchange = await TestExchange.create();
    try {
      const api = await managementClient(p.t, 'shop');
      const scope = { projectId: 'shop', environment: 'master' };
      const name = uniqueName('mq').replaceAll('_', '-');
      const destination = await api.post('/api/rest/_destinations', { ...scope, name, kind: 'rabbitmq', ...withoutCredentials(AMQP_URL) });
      expect(destination.status, JSON.stringify(destination.body)).to.equal(201);
      const created = await api.post('/api/rest/_webhooks', {
        ...scope,
        table: 'orders',
        events: ['INSERT', 'UPDATE'],
        destination: { name, exchange: exchange.exchange, routingKey: '{table}.{event}' },
        secret: 'whsec_b3V0YWdlLXRlc3Qtc2VjcmV0LTAwMDE=',
        ordering: 'row',
      });
      expect(created.status, JSON.stringify(created.body)).to.equal(201);
      const webhookId = created.body.webhook.id as string;
      const round = async (r: number) => {
        for (let id = 1; id <= ROWS; id++) {
          if (r === 0) await p.writer.query('INSERT INTO shop_master.orders (id, status, amount) VALUES ($1, $2, 0)', [id, 'v0']);
          else await p.writer.query('UPDATE shop_master.orders SET status = $2 WHERE id = $1', [id, `v${r}`]);
        }
      };
      await round(0);
      await round(1);
      await eventually(
        () => closeRabbitMqConnections(`walgate ${destination.body.destination.id}`),
        (n) => n > 0,
      );
      await round(2);
      await round(3);
      await round(4);
      const total = ROWS * ROUNDS;
      await eventually(
        () => p.delivery(webhookId),
        (d) => d.length === total && d.every((x) => x.status === 'delivered'),
        60_000,
      );
      const ids = exchange.received.map((m) => JSON.parse(m.body).id as string);
      expect(new Set(ids).size, 'every change is queued').to.equal(total);
      for (const m of exchange.received) expect(m.messageId, 'a repeat shares its event id').to.equal(JSON.parse(m.body).id);
      const firstSeen = new Map<number, string[]>();
      const seen = new Set<string>();
      for (const m of exchange.received) {
        const body = JSON.parse(m.body);
        if (seen.has(body.id)) continue;
        seen.add(body.id);
        firstSeen.set(body.record.id, [...(firstSeen.get(body.record.id) ?? []), body.record.status]);
      }
      for (let id = 1; id <= ROWS; id++) expect(firstSeen.get(id), `row ${id}`).to.deep.equal(['v0', 'v1', 'v2', 'v3', 'v4']);
    } finally {
      await exchange.close();
    }
  });
  it('NATS: refused credentials are a failed attempt that says so (never the password); the right ones PATCHed in are used', async () => {
    const secured = await OwnNatsServer.start(['--user', 'walgate', '--pass', 'the-right-password']);
    try {
      await p.removeSubscriptions();
      await p.writer.query('TRUNCATE shop_master.orders');
      const api = await managementClient(p.t, 'shop');
      const scope = { projectId: 'shop', environment: 'master' };
      const name = uniqueName('secured').replaceAll('_', '-');
      const wrong = `not-it-${uniqueName('pw')}`;
      const created = await api.post('/api/rest/_destinations', {
        ...scope,
        name,
        kind: 'nats',
        url: secured.url,
        username: 'walgate',
        password: wrong,
      });
      expect(created.status, JSON.stringify(created.body)).to.equal(201);
      const prefix = uniqueName('secured');
      const hook = await api.post('/api/rest/_webhooks', {
        ...scope,
        table: 'orders',
        events: ['INSERT'],
        destination: { name, subject: `${prefix}.{table}` },
        secret: 'whsec_b3V0YWdlLXRlc3Qtc2VjcmV0LTAwMDE=',
      });
      expect(hook.status, JSON.stringify(hook.body)).to.equal(201);
      const webhookId = hook.body.webhook.id as string;
      await p.writer.query("INSERT INTO shop_master.orders (id, status) VALUES (1, 'new')");
      const [failed] = await eventually(
        () => p.delivery(webhookId),
        (d) => d.length === 1 && d[0]!.last_error !== null,
        20_000,
      );
      expect(failed!.last_error).to.equal('NATS: the server refused the credentials');
      expect(JSON.stringify(failed)).not.to.include(wrong);
      const patched = await api.patch(`/api/rest/_destinations/${created.body.destination.id}`, { password: 'the-right-password' });
      expect(patched.status).to.equal(200);
      const stream = await TestStream.create([`${prefix}.>`], { natsUrl: `nats://walgate:the-right-password@127.0.0.1:${secured.port}` });
      try {
        // Its retries go on with the new password (the tailer reads the destination again within seconds).
        await eventually(
          () => p.delivery(webhookId),
          (d) => d[0]!.status === 'delivered',
          30_000,
        );
        expect(await stream.count()).to.equal(1);
      } finally {
        await stream.close();
      }
    } finally {
      await secured.close();
    }
  });
});
