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
import { killDaemon, spawnDeliveringDaemon, spawnWorkerDaemon, waitForStreaming } from '../tailer/support.js';

// The delivery bus on one NATS server: the leading tailer publishes, a worker delivers. A change of
// the subscription's row reaches the worker in its place in the stream (as it reaches the tailer's
// own stream without the bus), so a new URL takes effect from the next change on; and a tailer with
// a bus delivers nothing itself.

describe('delivery bus: the tailer publishes, a worker delivers', function () {
  this.timeout(120_000);
  let t: TestApi;
  let writer: pg.Client;
  let first: TestReceiver;
  let second: TestReceiver;
  let nc: NatsConnection;
  const bus: BusConfig = { servers: [NATS_URL], stream: uniqueName('WALGATE_BUS_TEST'), partitions: 4, replicas: 1 };
  const daemons: ChildProcess[] = [];
  const env = {
    DELIVERY_BUS: NATS_URL,
    DELIVERY_BUS_STREAM: bus.stream,
    DELIVERY_BUS_PARTITIONS: String(bus.partitions),
  };

  before(async () => {
    t = await startTestApi();
    await t.provision({ projectId: 'shop', name: 'master' });
    writer = new pg.Client({ connectionString: t.database.url });
    await writer.connect();
    await writer.query('CREATE TABLE shop_master.orders (id int PRIMARY KEY, status text)');
    first = new TestReceiver();
    second = new TestReceiver();
    await first.start();
    await second.start();
    nc = await connectBus(bus, 'walgate-test');
  });
  after(async () => {
    for (const d of daemons) await killDaemon(d);
    const jsm = await ensureBusStream(nc, bus).catch(() => null);
    await jsm?.streams.delete(bus.stream).catch(() => undefined);
    await nc?.close();
    await writer?.end();
    await first?.stop();
    await second?.stop();
    await t?.close();
  });

  it('delivers through the stream; a new URL takes effect from the next change on; a large change arrives whole; the tailer alone sends nothing; the worker reports its partitions', async () => {
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
    for (let until = Date.now() + 15_000; (await jsm.streams.info(bus.stream)).state.messages < 1;) {
      if (Date.now() > until) throw new Error('nothing published');
      await new Promise((r) => setTimeout(r, 50));
    }
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
    for (let until = Date.now() + 10_000; ;) {
      const { rows } = await t.ctx.pool.query(
        `SELECT status, count(*)::int AS n FROM walgate.deliveries WHERE webhook_id = $1 GROUP BY status`,
        [webhookId],
      );
      if (rows[0]?.n === 3 || Date.now() > until) {
        expect(rows).to.deep.equal([{ status: 'delivered', n: 3 }]);
        break;
      }
      await new Promise((r) => setTimeout(r, 50));
    }
  });
});

// A graceful hand-over with a parked change: worker A holds the only partition and parks a row's
// change (its receiver refuses it); worker B, running all along with no partition, takes over when
// A stops. B must learn that the row waits in the retry queue before it reads the partition: the
// row's next change goes out only after the parked one was accepted.
describe('delivery bus: a hand-over keeps a parked row in order', function () {
  this.timeout(120_000);
  let t: TestApi;
  let writer: pg.Client;
  let receiver: TestReceiver;
  let nc: NatsConnection;
  const bus: BusConfig = { servers: [NATS_URL], stream: uniqueName('WALGATE_BUS_TEST'), partitions: 1, replicas: 1 };
  const daemons: ChildProcess[] = [];
  const env = {
    DELIVERY_BUS: NATS_URL,
    DELIVERY_BUS_STREAM: bus.stream,
    DELIVERY_BUS_PARTITIONS: '1',
    // Retried every 0.7 s, 19 times: v1 outlives the refusals (a few seconds) without going dead.
    WEBHOOK_RETRY_DELAYS_MS: ['0', ...Array<string>(19).fill('700')].join(','),
    WEBHOOK_BREAKER_FAILURES: '100000',
  };

  before(async () => {
    t = await startTestApi();
    await t.provision({ projectId: 'shop', name: 'master' });
    writer = new pg.Client({ connectionString: t.database.url });
    await writer.connect();
    await writer.query('CREATE TABLE shop_master.items (id int PRIMARY KEY, version int)');
    await writer.query('INSERT INTO shop_master.items VALUES (1, 0)');
    receiver = new TestReceiver();
    await receiver.start();
    nc = await connectBus(bus, 'walgate-test');
  });
  after(async () => {
    for (const d of daemons) await killDaemon(d);
    const jsm = await ensureBusStream(nc, bus).catch(() => null);
    await jsm?.streams.delete(bus.stream).catch(() => undefined);
    await nc?.close();
    await writer?.end();
    await receiver?.stop();
    await t?.close();
  });

  it("the new owner parks the row's next change behind the one its previous owner parked", async () => {
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
    const holders = async () =>
      (
        await t.ctx.pool.query<{ pid: number }>(
          `SELECT l.pid FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
            WHERE l.locktype = 'advisory' AND l.granted AND a.application_name = 'walgate-worker-lock'`,
        )
      ).rows.map((r) => r.pid);
    const lockConnections = async () =>
      (await t.ctx.pool.query(`SELECT 1 FROM pg_stat_activity WHERE application_name = 'walgate-worker-lock'`)).rowCount;
    const a = await spawnWorkerDaemon(t, env);
    daemons.push(a);
    for (let until = Date.now() + 20_000; (await holders()).length !== 1;) {
      if (Date.now() > until) throw new Error('worker A holds no partition');
      await new Promise((r) => setTimeout(r, 50));
    }
    const [holderA] = await holders();
    daemons.push(await spawnWorkerDaemon(t, env)); // B: its session (and stream) runs, with no partition
    for (let until = Date.now() + 20_000; (await lockConnections()) !== 2;) {
      if (Date.now() > until) throw new Error('worker B did not start');
      await new Promise((r) => setTimeout(r, 50));
    }

    await writer.query('UPDATE shop_master.items SET version = 1 WHERE id = 1');
    // A tried v1 and parked it (the receiver refuses): it waits in the retry queue.
    for (let until = Date.now() + 20_000; ;) {
      const { rows } = await t.ctx.pool.query(`SELECT status FROM walgate.deliveries WHERE webhook_id = $1`, [webhookId]);
      if (rows[0]?.status === 'retrying') break;
      if (Date.now() > until) throw new Error(`v1 not parked: ${JSON.stringify(rows)}`);
      await new Promise((r) => setTimeout(r, 50));
    }
    // A stops gracefully; B takes the partition.
    const exited = new Promise((resolve) => a.once('exit', resolve));
    a.kill('SIGTERM');
    await exited;
    for (let until = Date.now() + 20_000; ;) {
      const h = await holders();
      if (h.length === 1 && h[0] !== holderA) break;
      if (Date.now() > until) throw new Error(`B did not take the partition: ${JSON.stringify(h)}`);
      await new Promise((r) => setTimeout(r, 50));
    }
    await writer.query('UPDATE shop_master.items SET version = 2 WHERE id = 1');
    await new Promise((r) => setTimeout(r, 1500)); // B has v2 by now (read, parked behind v1, or — wrongly — sent)
    refusing = false;
    for (let until = Date.now() + 30_000; firstAccepted.size < 2;) {
      if (Date.now() > until) throw new Error(`accepted: ${JSON.stringify([...firstAccepted])}`);
      await new Promise((r) => setTimeout(r, 50));
    }
    // v2 was never even requested before v1 was accepted.
    const firstV2 = receiver.requests.findIndex((r) => JSON.parse(r.body).record.version === 2);
    expect(firstV2, 'the first request of v2 comes after v1 was accepted').to.be.greaterThan(firstAccepted.get(1)!);
  });
});
