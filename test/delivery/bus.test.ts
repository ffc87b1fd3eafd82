import type { ChildProcess } from 'node:child_process';
import { expect } from 'chai';
import pg from 'pg';
import type { NatsConnection } from '@nats-io/transport-node';
import { connectBus, ensureBusStream, type BusConfig } from '../../src/delivery/bus/jetstream.js';
import { freePort } from '../../src/core/db/embedded.js';
import { startTestApi, type TestApi } from '../support/api.js';
import { NATS_URL, uniqueName } from '../support/brokers.js';
import { TestReceiver } from '../support/receiver.js';
import { insertSubscription } from '../support/subscriptions.js';
import { killDaemon, partitionsHeld, spawnDeliveringDaemon, spawnWorkerDaemon, waitForStreaming } from '../tailer/support.js';
import { eventually } from './support.js';

// The delivery bus on one NATS server: the leading tailer publishes, a worker delivers. A change of
// the subscription's row reaches the worker in its place in the stream (as it reaches the tailer's
// own stream without the bus), so a new URL takes effect from the next change on; and a tailer with
// a bus delivers nothing itself.

interface BusFixture {
  t: TestApi;
  writer: pg.Client;
  receivers: TestReceiver[];
  nc: NatsConnection;
  bus: BusConfig;
  /** The settings of every daemon of the test: the bus, and `env`. */
  env: Record<string, string>;
  daemons: ChildProcess[];
}

/** A database whose `ddl` runs first, `receivers` HTTPS receivers, and a bus stream of the test's own (removed after it). */
function busFixture(o: { partitions: number; ddl: string[]; receivers: number; env?: Record<string, string> }): BusFixture {
  const bus: BusConfig = { servers: [NATS_URL], stream: uniqueName('WALGATE_BUS_TEST'), partitions: o.partitions, replicas: 1 };
  const f = {
    bus,
    env: { DELIVERY_BUS: NATS_URL, DELIVERY_BUS_STREAM: bus.stream, DELIVERY_BUS_PARTITIONS: String(o.partitions), ...o.env },
    daemons: [],
    receivers: [],
  } as unknown as BusFixture;
  before(async () => {
    f.t = await startTestApi();
    await f.t.provision({ projectId: 'shop', name: 'master' });
    f.writer = new pg.Client({ connectionString: f.t.database.url });
    await f.writer.connect();
    for (const statement of o.ddl) await f.writer.query(statement);
    for (let i = 0; i < o.receivers; i++) {
      const receiver = new TestReceiver();
      await receiver.start();
      f.receivers.push(receiver);
    }
    f.nc = await connectBus(bus, 'walgate-test');
  });
  after(async () => {
    for (const d of f.daemons) await killDaemon(d);
    const jsm = await ensureBusStream(f.nc, bus).catch(() => null);
    await jsm?.streams.delete(bus.stream).catch(() => undefined);
    await f.nc?.close();
    await f.writer?.end();
    for (const r of f.receivers) await r.stop();
    await f.t?.close();
  });
  return f;
}

describe('delivery bus: the tailer publishes, a worker delivers', function () {
  this.timeout(120_000);
  const f = busFixture({ partitions: 4, ddl: ['CREATE TABLE shop_master.orders (id int PRIMARY KEY, status text)'], receivers: 2 });

  it('delivers through the stream; a new URL takes effect from the next change on; a large change arrives whole; the tailer alone sends nothing; the worker reports its partitions', async () => {
    const { t, writer, env, daemons, bus, nc } = f;
    const [first, second] = f.receivers as [TestReceiver, TestReceiver];
    const webhookId = await insertSubscription(t.ctx, {
      projectId: 'shop',
      environment: 'master',
      schema: 'shop_master',
      table: 'orders',
      url: `${first.url}/hook`,
      events: ['INSERT', 'UPDATE'],
      ordering: 'row',
    });
    daemons.push(await spawnDeliveringDaemon(t, env));
    await waitForStreaming(t, 20_000);
    await writer.query(`INSERT INTO shop_master.orders VALUES (1, 'new')`);
    // Published, not sent: no worker runs yet.
    const jsm = await ensureBusStream(nc, bus);
    await eventually(
      async () => (await jsm.streams.info(bus.stream)).state.messages,
      (n) => n >= 1,
      15_000,
    );
    expect(first.requests).to.have.length(0);

    const port = await freePort();
    daemons.push(await spawnWorkerDaemon(t, { ...env, WORKER_PORT: String(port) }));
    const [r] = await first.waitFor(1, 20_000);
    expect(JSON.parse(r!.body)).to.deep.include({ event: 'INSERT', table: 'orders' });
    // Its own listener: ready, holding every partition (it is the only worker), and the same in /metrics.
    const ready = await fetch(`http://127.0.0.1:${port}/readyz`);
    expect(ready.status).to.equal(200);
    const checks = ((await ready.json()) as { checks: Array<{ name: string; detail?: unknown }> }).checks;
    expect(checks.find((c) => c.name === 'worker')?.detail).to.deep.equal({ partitions: [0, 1, 2, 3] });
    expect(await (await fetch(`http://127.0.0.1:${port}/metrics`)).text()).to.match(/^walgate_bus_partitions_held 4$/m);

    await writer.query(`UPDATE walgate.webhooks SET url = $1 WHERE id = $2`, [`${second.url}/hook`, webhookId]);
    await writer.query(`UPDATE shop_master.orders SET status = 'paid' WHERE id = 1`);
    const [moved] = await second.waitFor(1, 20_000);
    expect(JSON.parse(moved!.body)).to.deep.include({ event: 'UPDATE' });
    expect(first.requests).to.have.length(1);
    // A change larger than a message part (publisher.ts PART_BYTES) travels in parts and arrives whole.
    const large = 'é'.repeat(400_000); // 800 KB of UTF-8: a part boundary falls inside a character
    await writer.query(`UPDATE shop_master.orders SET status = $1 WHERE id = 1`, [large]);
    const [, big] = await second.waitFor(2, 20_000);
    expect(JSON.parse(big!.body).record.status === large, 'the large change, whole').to.equal(true);
    // The history rows follow the answers (group commit): all delivered, once each.
    const history = async () =>
      (
        await t.ctx.pool.query(`SELECT status, count(*)::int AS n FROM walgate.deliveries WHERE webhook_id = $1 GROUP BY status`, [
          webhookId,
        ])
      ).rows;
    await eventually(history, (rows) => rows[0]?.n === 3, 10_000).catch(() => undefined);
    expect(await history()).to.deep.equal([{ status: 'delivered', n: 3 }]);
  });
});

// A graceful hand-over with a parked change: worker A holds the only partition and parks a row's
// change (its receiver refuses it); worker B, running all along with no partition, takes over when
// A stops. B must learn that the row waits in the retry queue before it reads the partition: the
// row's next change goes out only after the parked one was accepted.
describe('delivery bus: a hand-over keeps a parked row in order', function () {
  this.timeout(120_000);
  const f = busFixture({
    partitions: 1,
    ddl: ['CREATE TABLE shop_master.items (id int PRIMARY KEY, version int)', 'INSERT INTO shop_master.items VALUES (1, 0)'],
    receivers: 1,
    env: {
      // Retried every 0.7 s, 19 times: v1 outlives the refusals (a few seconds) without going dead.
      WEBHOOK_RETRY_DELAYS_MS: ['0', ...Array<string>(19).fill('700')].join(','),
      WEBHOOK_BREAKER_FAILURES: '100000',
    },
  });

  it("the new owner parks the row's next change behind the one its previous owner parked", async () => {
    const { t, writer, env, daemons } = f;
    const receiver = f.receivers[0]!;
    const webhookId = await insertSubscription(t.ctx, {
      projectId: 'shop',
      environment: 'master',
      schema: 'shop_master',
      table: 'items',
      url: `${receiver.url}/hook`,
      events: ['UPDATE'],
      ordering: 'row',
    });
    let refusing = true;
    const firstAccepted = new Map<number, number>(); // version → index of its first 2xx
    receiver.behave = (req, index) => {
      const version = JSON.parse(req.body).record.version as number;
      if (refusing) return { status: 503 };
      if (!firstAccepted.has(version)) firstAccepted.set(version, index);
      return { status: 200 };
    };
    daemons.push(await spawnDeliveringDaemon(t, env));
    await waitForStreaming(t, 20_000);
    const holders = async () => [...(await partitionsHeld(t)).keys()];
    const lockConnections = async () =>
      (await t.ctx.pool.query(`SELECT 1 FROM pg_stat_activity WHERE application_name = 'walgate-worker-lock'`)).rowCount;
    const a = await spawnWorkerDaemon(t, env);
    daemons.push(a);
    const [holderA] = await eventually(holders, (h) => h.length === 1, 20_000); // A holds the partition
    daemons.push(await spawnWorkerDaemon(t, env)); // B: its session (and stream) runs, with no partition
    await eventually(lockConnections, (n) => n === 2, 20_000); // B runs

    await writer.query('UPDATE shop_master.items SET version = 1 WHERE id = 1');
    // A tried v1 and parked it (the receiver refuses): it waits in the retry queue.
    await eventually(
      async () => (await t.ctx.pool.query(`SELECT status FROM walgate.deliveries WHERE webhook_id = $1`, [webhookId])).rows,
      (rows) => rows[0]?.status === 'retrying',
      20_000,
    );
    // A stops gracefully; B takes the partition.
    const exited = new Promise((resolve) => a.once('exit', resolve));
    a.kill('SIGTERM');
    await exited;
    await eventually(holders, (h) => h.length === 1 && h[0] !== holderA, 20_000); // B took the partition
    await writer.query('UPDATE shop_master.items SET version = 2 WHERE id = 1');
    await new Promise((r) => setTimeout(r, 1500)); // B has v2 by now (read, parked behind v1, or — wrongly — sent)
    refusing = false;
    await eventually(
      async () => [...firstAccepted],
      (accepted) => accepted.length >= 2,
      30_000,
    );
    // v2 was never even requested before v1 was accepted.
    const firstV2 = receiver.requests.findIndex((r) => JSON.parse(r.body).record.version === 2);
    expect(firstV2, 'the first request of v2 comes after v1 was accepted').to.be.greaterThan(firstAccepted.get(1)!);
  });
});
