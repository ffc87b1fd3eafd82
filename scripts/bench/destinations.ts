import { randomBytes } from 'node:crypto';
import pg from 'pg';
import amqp from 'amqplib';
import { connect } from '@nats-io/transport-node';
import { jetstreamManager, StorageType } from '@nats-io/jetstream';
import { encodeAddress } from '../../src/delivery/destinations/address.js';
import { sealCredentials } from '../../src/delivery/destinations/credentials.js';
import { insertSubscription } from '../../test/support/subscriptions.js';
import type { Bench } from './run.js';
import { processCpuUs } from './cpu.js';
import { burst, median, ROWS, RUNS, type Round } from './delivery-rate.js';
import { startNats } from './nats-server.js';
import { until } from './processes.js';
import { round, summarize } from './stats.js';

// Publishing to broker destinations (docs/destinations.md) against POSTing, in the same rounds and
// through the same tailer: ROWS INSERTs of 1 KB rows in 1,000-row transactions, first INSERT → the
// broker holds every message (JetStream: the stream's count; RabbitMQ: the queue's), each publish
// acknowledged by the broker (JetStream's ack, RabbitMQ's publisher confirm). NATS is a server of
// the bench's own; RabbitMQ is AMQP_URL (default the local guest), its row failing with the reason
// when there is none.

const AMQP_URL = process.env.AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672/';
const PAYLOAD = 'x'.repeat(1000);

async function destination(b: Bench, kind: 'nats' | 'rabbitmq', url: string, credentials: Record<string, string>): Promise<string> {
  const id = `dst_${randomBytes(8).toString('hex')}`;
  const { sealed, names } = sealCredentials(b.ctx.secrets, credentials);
  await b.pool.query(
    `INSERT INTO walgate.destinations (id, project_id, environment, name, kind, url, credentials, credential_names) VALUES ($1, 'bench', 'master', $2, $3, $4, $5, $6)`,
    [id, `bench-${kind}-${id.slice(-6)}`, kind, url, sealed, names],
  );
  return id;
}

async function subscribe(b: Bench, table: string, url: string, destinationId?: string): Promise<string> {
  await b.pool.query(`CREATE TABLE IF NOT EXISTS bench_master.${table} (id bigserial PRIMARY KEY, payload text)`);
  const id = await insertSubscription(b.ctx, { projectId: 'bench', environment: 'master', schema: 'bench_master', table, events: ['INSERT'], url, secret: b.secret });
  if (destinationId) await b.pool.query('UPDATE walgate.webhooks SET destination_id = $2 WHERE id = $1', [id, destinationId]);
  return id;
}

/** INSERTs `rows` and waits until `count()` has grown by them; the rate and the tailer's CPU per message. */
async function publishBurst(b: Bench, client: pg.Client, table: string, rows: number, tailerPid: number, count: () => Promise<number>): Promise<Round> {
  const before = await count();
  const cpu0 = await processCpuUs(tailerPid);
  const t0 = performance.now();
  for (let i = 0; i < rows; i += 1000) await client.query(`INSERT INTO bench_master.${table} (payload) SELECT $1 FROM generate_series(1, 1000)`, [PAYLOAD]);
  const inserted = rows / ((performance.now() - t0) / 1000);
  let n = before;
  await until(async () => ((n = await count()), { done: n >= before + rows, state: `${n - before} of ${rows} messages` }), 180_000, `${table}: messages at the broker`);
  const delivered = rows / ((performance.now() - t0) / 1000);
  if (n !== before + rows) throw new Error(`${table}: ${n - before} messages for ${rows} changes`);
  return { delivered, inserted, cpu: { consumer: Math.round(((await processCpuUs(tailerPid)) - cpu0) / rows) } };
}

async function destinationRates(b: Bench): Promise<void> {
  const nats = await startNats(b);
  const nc = await connect({ servers: nats.url.replace('nats://', '') });
  const jsm = await jetstreamManager(nc);
  await jsm.streams.add({ name: 'BENCH_DESTINATION', subjects: ['bench.destination'], storage: StorageType.File });
  const rabbit = await amqp.connect(AMQP_URL).catch((err: Error) => err);
  const channel = rabbit instanceof Error ? null : await rabbit.createChannel();
  const queue = `walgate_bench_${randomBytes(4).toString('hex')}`;
  if (channel) {
    await channel.assertExchange(queue, 'topic', { durable: false, autoDelete: false });
    await channel.assertQueue(queue, { durable: false });
    await channel.bindQueue(queue, queue, '#');
  }
  const natsDestination = await destination(b, 'nats', nats.url, {});
  const amqpUrl = new URL(AMQP_URL);
  const rabbitDestination = channel
    ? await destination(b, 'rabbitmq', `${amqpUrl.protocol}//${amqpUrl.host}${amqpUrl.pathname === '/' ? '' : amqpUrl.pathname}`, {
        username: decodeURIComponent(amqpUrl.username),
        password: decodeURIComponent(amqpUrl.password),
      })
    : null;
  const subs = [
    await subscribe(b, 'destination_http', `${b.receiver.url}/destinationhttp`),
    await subscribe(b, 'destination_nats', encodeAddress({ kind: 'nats', destinationId: natsDestination, subject: 'bench.destination' }), natsDestination),
  ];
  if (rabbitDestination)
    subs.push(await subscribe(b, 'destination_rabbit', encodeAddress({ kind: 'rabbitmq', destinationId: rabbitDestination, exchange: queue, routingKey: 'bench' }), rabbitDestination));
  const natsCount = async () => (await jsm.streams.info('BENCH_DESTINATION')).state.messages;
  const rabbitCount = async () => (await channel!.checkQueue(queue)).messageCount;
  const tailer = await b.startTailer();
  const client = new pg.Client({ connectionString: b.clusterUrl });
  await client.connect();
  const rounds: Record<'http' | 'nats' | 'rabbitmq', Round[]> = { http: [], nats: [], rabbitmq: [] };
  try {
    const pid = tailer.daemon.child.pid!;
    // A warm-up round of each (connections, TLS sessions, JIT), not measured.
    await burst(b, client, { table: 'bench_master.destination_http', path: '/destinationhttp', rows: 2000, txRows: 1000 });
    await publishBurst(b, client, 'destination_nats', 2000, pid, natsCount);
    if (channel) await publishBurst(b, client, 'destination_rabbit', 2000, pid, rabbitCount);
    for (let run = 0; run < RUNS; run++) {
      rounds.http.push(await burst(b, client, { table: 'bench_master.destination_http', path: '/destinationhttp', rows: ROWS, txRows: 1000, consumerPid: pid }));
      rounds.nats.push(await publishBurst(b, client, 'destination_nats', ROWS, pid, natsCount));
      if (channel) {
        await channel.purgeQueue(queue);
        rounds.rabbitmq.push(await publishBurst(b, client, 'destination_rabbit', ROWS, pid, rabbitCount));
      }
    }
  } finally {
    await client.end();
    await tailer.stop();
    for (const id of subs) await b.pool.query('DELETE FROM walgate.webhooks WHERE id = $1', [id]);
    await channel?.deleteQueue(queue).catch(() => undefined);
    await channel?.deleteExchange(queue).catch(() => undefined);
    if (!(rabbit instanceof Error)) await rabbit.close().catch(() => undefined);
    await nc.close();
    await nats.stop();
  }
  const http = median(rounds.http, 'delivered');
  const cpuOf = (r: Round[]) => summarize(r.map((x) => x.cpu.consumer ?? 0)).median;
  const workload = `${ROWS.toLocaleString('en')} INSERTs in 1,000-row transactions`;
  for (const kind of ['nats', 'rabbitmq'] as const) {
    const name = kind === 'nats' ? 'NATS JetStream (publish acknowledged)' : 'RabbitMQ (publisher confirms, persistent)';
    if (kind === 'rabbitmq' && !channel) {
      b.record({ path: `publish to a ${name} destination vs POST`, unit: '—', value: summarize([0]), target: `failed: no RabbitMQ at ${amqpUrl.host} (${(rabbit as Error).message})`, met: false });
      continue;
    }
    const value = median(rounds[kind], 'delivered');
    b.record({
      path: `publish to a ${name} destination vs POST to an HTTPS receiver (${workload})`,
      unit: 'messages/s',
      value,
      baseline: { name: 'the same changes POSTed to the HTTPS receiver by the same tailer, same rounds', value: http },
      ratio: round(value.median / http.median),
      target: 'for reference (no target): what a broker destination costs against HTTP',
      met: true,
      extra: { tailerCpuUsPerMessage: cpuOf(rounds[kind]), tailerCpuUsPerPost: cpuOf(rounds.http) },
    });
  }
}

export function destinationPaths(b: Bench): Array<[string, () => Promise<void>]> {
  return [['destinations', () => destinationRates(b)]];
}
