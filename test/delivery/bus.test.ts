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

  it('delivers through the stream; a new URL takes effect from the next change on; the tailer alone sends nothing; the worker reports its partitions', async () => {
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
    // The history rows follow the answers (group commit): both delivered, once each.
    for (let until = Date.now() + 10_000; ;) {
      const { rows } = await t.ctx.pool.query(
        `SELECT status, count(*)::int AS n FROM walgate.deliveries WHERE webhook_id = $1 GROUP BY status`,
        [webhookId],
      );
      if (rows[0]?.n === 2 || Date.now() > until) {
        expect(rows).to.deep.equal([{ status: 'delivered', n: 2 }]);
        break;
      }
      await new Promise((r) => setTimeout(r, 50));
    }
  });
});
