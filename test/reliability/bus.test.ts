import type { ChildProcess } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { expect } from 'chai';
import pg from 'pg';
import { Webhook } from 'standardwebhooks';
import type { NatsConnection } from '@nats-io/transport-node';
import { ensureBusStream, type BusConfig } from '../../src/delivery/bus/jetstream.js';
import { startTestApi, type TestApi } from '../support/api.js';
import { NatsCluster, uniqueName } from '../support/brokers.js';
import { TestReceiver } from '../support/receiver.js';
import { insertSubscription } from '../support/subscriptions.js';
import { killDaemon, partitionsHeld, spawnDeliveringDaemon, spawnWorkerDaemon, waitForStreaming } from '../tailer/support.js';
import { expectEveryRowInOrder, refuseAtRandom, rowOrderOf } from './row-order-check.js';

// The scale-out demonstration: three nats-servers on loopback ports forming a cluster, an R3
// stream, a leading tailer and a standby that publish to it, two delivery workers, an HTTPS receiver
// that refuses 10 % of requests at random (so the retry queue and its order are part of it). Under
// about 1,000 changes/s the stream's leader is SIGKILLed, then a worker, then the leading tailer. Every
// change ends with exactly one `delivered` history row; per row, the versions the receiver first
// accepts go up by one; no change is requested before the previous change of its row was accepted;
// and a change sent twice is sent with the same event id.

const SECRET = 'whsec_' + Buffer.from('bus-test-secret-of-32-bytes-long').toString('base64');

describe('delivery bus: a 3-node JetStream cluster, two workers, SIGKILLs of the stream leader, a worker and the leading tailer', function () {
  this.timeout(300_000);
  let t: TestApi;
  let writer: pg.Client;
  let receiver: TestReceiver;
  let cluster: NatsCluster;
  let nc: NatsConnection;
  const daemons: ChildProcess[] = [];

  before(async () => {
    t = await startTestApi();
    await t.provision({ projectId: 'shop', name: 'master' });
    writer = new pg.Client({ connectionString: t.database.url });
    await writer.connect();
    await writer.query('CREATE TABLE shop_master.items (id int PRIMARY KEY, version int NOT NULL)');
    await writer.query('INSERT INTO shop_master.items SELECT g, 0 FROM generate_series(1, 200) g');
    receiver = new TestReceiver();
    await receiver.start();
    cluster = await NatsCluster.start(3);
    nc = await cluster.connect();
  });
  after(async () => {
    for (const d of daemons) if (d.exitCode === null) d.kill('SIGKILL');
    await nc?.close().catch(() => undefined);
    await cluster?.close();
    await writer?.end();
    await receiver?.stop();
    await t?.close();
  });

  it('15,000 updates over 200 rows at ~1,000/s: one delivered row per change, each row in order', async () => {
    const ROWS = 200;
    const UPDATES = 15_000;
    const PER_TRANSACTION = 50;
    const bus: BusConfig = { servers: cluster.urls.split(','), stream: uniqueName('WALGATE_BUS'), partitions: 8, replicas: 3 };
    // The R3 stream, made once the cluster has elected its meta leader.
    const until = Date.now() + 30_000;
    let jsm: Awaited<ReturnType<typeof ensureBusStream>>;
    for (;;) {
      try {
        jsm = await ensureBusStream(nc, bus);
        break;
      } catch (err) {
        if (Date.now() > until) throw err;
        await sleep(250);
      }
    }
    expect((await jsm.streams.info(bus.stream)).config.num_replicas).to.equal(3);

    const { acceptedAt, answers } = refuseAtRandom(receiver, 0x5eed_1234, 0.1);
    const webhookId = await insertSubscription(t.ctx, {
      projectId: 'shop',
      environment: 'master',
      schema: 'shop_master',
      table: 'items',
      url: `${receiver.url}/hook`,
      secret: SECRET,
      events: ['UPDATE'],
      ordering: 'row',
    });

    const env = {
      DELIVERY_BUS: cluster.urls,
      DELIVERY_BUS_STREAM: bus.stream,
      DELIVERY_BUS_PARTITIONS: String(bus.partitions),
      DELIVERY_BUS_REPLICAS: '3',
      WEBHOOK_RETRY_DELAYS_MS: '0,10,20,40,80',
      WEBHOOK_BREAKER_FAILURES: '100000',
    };
    const tailer = async () => {
      const child = await spawnDeliveringDaemon(t, env);
      daemons.push(child);
      return child;
    };
    const worker = async () => {
      const child = await spawnWorkerDaemon(t, env);
      daemons.push(child);
      return child;
    };
    const leader = await tailer();
    await waitForStreaming(t, 20_000);
    await tailer();
    const held = async () => [...(await partitionsHeld(t)).values()];
    const holding = async (want: (h: number[]) => boolean) => {
      for (let deadline = Date.now() + 30_000; ;) {
        const h = await held();
        if (want(h)) return;
        if (Date.now() > deadline) throw new Error(`partitions held per worker: ${JSON.stringify(h)}`);
        await sleep(100);
      }
    };
    // One worker holds every partition; a second one takes its share from it.
    const firstWorker = await worker();
    await holding((h) => h.length === 1 && h[0] === bus.partitions);
    await worker();
    await holding((h) => h.length === 2 && h.every((n) => n > 0) && h[0]! + h[1]! === bus.partitions);

    const started = Date.now();
    const writing = (async () => {
      let state = 11;
      for (let done = 0; done < UPDATES; done += PER_TRANSACTION) {
        const ids = new Set<number>();
        while (ids.size < PER_TRANSACTION) {
          state = (Math.imul(state, 1103515245) + 12345) >>> 0;
          ids.add(((state >>> 16) % ROWS) + 1);
        }
        await writer.query('UPDATE shop_master.items SET version = version + 1 WHERE id = ANY ($1)', [[...ids]]);
        // About 1,000 changes/s: 50 per transaction, 20 transactions a second.
        const due = started + ((done + PER_TRANSACTION) / 1000) * 1000;
        if (due > Date.now()) await sleep(due - Date.now());
      }
    })();
    const whenAccepted = async (n: number) => {
      while (acceptedAt.size < n) {
        if (Date.now() - started > 120_000) throw new Error(`only ${acceptedAt.size} changes accepted, waiting for ${n}`);
        await sleep(20);
      }
    };
    await whenAccepted(3000);
    const streamLeader = await cluster.streamLeader(jsm!, bus.stream);
    await streamLeader.stop();
    await whenAccepted(6000);
    await killDaemon(firstWorker);
    await whenAccepted(9000);
    await killDaemon(leader);
    await writing;
    const writtenIn = Date.now() - started;
    await streamLeader.resume(); // back in the cluster, as an operator would bring it

    const deadline = Date.now() + 150_000;
    while (acceptedAt.size < UPDATES) {
      if (Date.now() > deadline) throw new Error(`only ${acceptedAt.size} of ${UPDATES} changes accepted`);
      await sleep(200);
    }
    const tookMs = Date.now() - started;

    const idsOf = new Map<string, string>(); // webhook-id → event id: a change sent again carries the same
    const standard = new Webhook(SECRET.slice('whsec_'.length));
    const { accepted, early, resent } = rowOrderOf(receiver.requests, { acceptedAt, answers }, (r, index, body) => {
      if (index % 500 === 0) expect(() => standard.verify(r.body, r.headers)).not.to.throw();
      const hookId = r.headers['webhook-id']!;
      expect(idsOf.get(hookId) ?? body.id, `${hookId} sent again with another event`).to.equal(body.id);
      idsOf.set(hookId, body.id);
    });
    expect(early.slice(0, 10)).to.deep.equal([]);
    const { rows: sum } = await writer.query('SELECT sum(version)::int AS n FROM shop_master.items');
    expect(sum[0].n).to.equal(UPDATES);
    await expectEveryRowInOrder(writer, 'shop_master.items', accepted);
    // Exactly one history row per change, delivered (its retries on the same row).
    for (let settledBy = Date.now() + 30_000; ;) {
      const { rows } = await t.ctx.pool.query(
        `SELECT count(*)::int AS n, count(*) FILTER (WHERE status = 'delivered')::int AS delivered, count(DISTINCT event_id)::int AS events
           FROM walgate.deliveries WHERE webhook_id = $1`,
        [webhookId],
      );
      if (rows[0].delivered === UPDATES || Date.now() > settledBy) {
        expect(rows[0]).to.deep.equal({ n: UPDATES, delivered: UPDATES, events: UPDATES });
        break;
      }
      await sleep(200);
    }
    const refused = answers.filter((a) => !a).length;
    console.log(
      `      ${UPDATES} changes written in ${(writtenIn / 1000).toFixed(1)} s, all accepted after ${(tookMs / 1000).toFixed(1)} s: ` +
        `${receiver.requests.length} requests, ${refused} refused, ${resent} sent again after they were accepted`,
    );
  });
});
