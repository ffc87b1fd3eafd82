import type { ChildProcess } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { expect } from 'chai';
import pg from 'pg';
import { startTestApi, type TestApi } from '../support/api.js';
import { TestReceiver } from '../support/receiver.js';
import { insertSubscription } from '../support/subscriptions.js';
import { killDaemon, spawnDeliveringDaemon, waitForStreaming } from '../tailer/support.js';
import { expectEveryRowInOrder, refuseAtRandom, rowOrderOf } from './row-order-check.js';

// The demonstration of row ordering: a receiver that refuses a random 30 % of requests
// (never one delivery more than three times, never one it accepted before, so none goes dead) gets 10,000 updates
// spread over 100 rows — each update bumps the row's version — while two tailer daemons run (a
// leader and a standby, both draining the retry queue) and the leader is SIGKILLed mid-way. Per
// row, the versions the receiver first accepts (2xx; it dedupes by webhook-id, as at-least-once
// asks) go up by one each time, and no change is even requested before the previous change of its
// row was accepted.

describe('row ordering under random failures and a SIGKILL of the leading tailer', function () {
  this.timeout(240_000);
  let t: TestApi;
  let writer: pg.Client;
  let receiver: TestReceiver;
  const daemons: ChildProcess[] = [];

  before(async () => {
    t = await startTestApi();
    await t.provision({ projectId: 'shop', name: 'master' });
    writer = new pg.Client({ connectionString: t.database.url });
    await writer.connect();
    await writer.query('CREATE TABLE shop_master.items (id int PRIMARY KEY, version int NOT NULL)');
    await writer.query('INSERT INTO shop_master.items SELECT g, 0 FROM generate_series(1, 100) g');
    receiver = new TestReceiver();
    await receiver.start();
  });
  after(async () => {
    for (const d of daemons) if (d.exitCode === null) d.kill('SIGKILL');
    await writer?.end();
    await receiver?.stop();
    await t?.close();
  });

  it("10,000 updates over 100 rows: each row's versions first arrive in order, without a gap", async () => {
    const ROWS = 100;
    const UPDATES = 10_000;
    const PER_TRANSACTION = 50;
    // The receiver: 30 % refused at random, but never a fourth time for one delivery.
    const { acceptedAt, answers } = refuseAtRandom(receiver, 0x2f6b_1e3d, 0.3);
    await insertSubscription(t.ctx, {
      projectId: 'shop',
      environment: 'master',
      schema: 'shop_master',
      table: 'items',
      url: `${receiver.url}/hook`,
      events: ['UPDATE'],
      ordering: 'row',
    });

    const launch = async () => {
      const child = await spawnDeliveringDaemon(t, {
        WEBHOOK_RETRY_DELAYS_MS: '0,10,20,40,80',
        // 30 % refusals make runs of five failures common: the breaker must not pause the endpoint.
        WEBHOOK_BREAKER_FAILURES: '100000',
      });
      daemons.push(child);
      return child;
    };

    const first = await launch();
    // Let the first one lead before the standby starts, so that the leader is known.
    await waitForStreaming(t, 20_000);
    await launch();

    const started = Date.now();
    const writing = (async () => {
      let state = 7;
      for (let done = 0; done < UPDATES; done += PER_TRANSACTION) {
        // 50 distinct rows of the 100, picked by a 32-bit LCG: each row gets about 100 updates.
        const ids = new Set<number>();
        while (ids.size < PER_TRANSACTION) {
          state = (Math.imul(state, 1103515245) + 12345) >>> 0;
          ids.add(((state >>> 16) % ROWS) + 1);
        }
        await writer.query('UPDATE shop_master.items SET version = version + 1 WHERE id = ANY ($1)', [[...ids]]);
        if (done % 1000 === 0) await sleep(20);
      }
    })();

    // Kill the leader (the first daemon) once a good part of the changes has arrived.
    while (acceptedAt.size < UPDATES / 4) {
      if (Date.now() - started > 60_000) throw new Error(`only ${acceptedAt.size} changes accepted before the kill`);
      await sleep(20);
    }
    const atKill = acceptedAt.size;
    await killDaemon(first);
    await writing;
    const versions = await writer.query('SELECT sum(version)::int AS n FROM shop_master.items');
    expect(versions.rows[0].n).to.equal(UPDATES);
    await launch(); // back as the standby

    const deadline = Date.now() + 150_000;
    while (acceptedAt.size < UPDATES) {
      if (Date.now() > deadline) throw new Error(`only ${acceptedAt.size} of ${UPDATES} changes accepted`);
      await sleep(200);
    }
    const tookMs = Date.now() - started;

    // Per row, in the order of arrival: the first 2xx of each change, and every request; `resent`:
    // requests of a change after it was accepted (the kill's duplicates).
    const { accepted, early, resent } = rowOrderOf(receiver.requests, { acceptedAt, answers });
    expect(early.slice(0, 10)).to.deep.equal([]);
    await expectEveryRowInOrder(writer, 'shop_master.items', accepted);
    const refused = answers.filter((a) => !a).length;
    const dead = await t.ctx.pool.query(`SELECT count(*)::int AS n FROM walgate.deliveries WHERE status = 'dead'`);
    expect(dead.rows[0].n).to.equal(0);
    console.log(
      `      ${UPDATES} changes over ${ROWS} rows in ${(tookMs / 1000).toFixed(1)} s: ${receiver.requests.length} requests, ` +
        `${refused} refused (${((100 * refused) / receiver.requests.length).toFixed(0)} %), ${resent} sent again after they were accepted, ` +
        `${atKill} accepted when the leader was killed`,
    );
    expect(atKill, 'the kill came in the middle').to.be.below(UPDATES);
  });
});
