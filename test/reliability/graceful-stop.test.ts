import type { ChildProcess } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { expect } from 'chai';
import pg from 'pg';
import { startTestApi, type TestApi } from '../support/api.js';
import { TestReceiver } from '../support/receiver.js';
import { insertSubscription } from '../support/subscriptions.js';
import { spawnDeliveringDaemon, waitForStreaming } from '../tailer/support.js';

// A clean stop sends nothing twice (issue 35): SIGTERM to the tailer while changes stream out at
// about 2,000 a second, then a restart. Before, the stop dropped the history rows gathered for
// their write and the answers of requests in flight, and the restart sent those changes again
// (35 of 20,000 in the run). Now the stream settles everything it holds before it lets go.

describe('a graceful stop of the tailer mid-stream', function () {
  this.timeout(180_000);
  let t: TestApi;
  let writer: pg.Client;
  let receiver: TestReceiver;
  const daemons: ChildProcess[] = [];

  before(async () => {
    t = await startTestApi();
    await t.provision({ projectId: 'shop', name: 'master' });
    writer = new pg.Client({ connectionString: t.database.url });
    await writer.connect();
    await writer.query('CREATE TABLE shop_master.items (id int PRIMARY KEY, note text)');
    receiver = new TestReceiver();
    await receiver.start();
  });
  after(async () => {
    for (const d of daemons) if (d.exitCode === null) d.kill('SIGKILL');
    await writer?.end();
    await receiver?.stop();
    await t?.close();
  });

  it('SIGTERM at 2,000 changes/s, then a restart: every change arrives, and none the receiver answered 2xx arrives again', async () => {
    const answered = new Map<string, number>(); // event id → 2xx answers
    receiver.behave = (req) => {
      const id = req.headers['webhook-id']!;
      answered.set(id, (answered.get(id) ?? 0) + 1);
      return { status: 200 };
    };
    await insertSubscription(t.ctx, {
      projectId: 'shop',
      environment: 'master',
      schema: 'shop_master',
      table: 'items',
      url: `${receiver.url}/hook`,
      events: ['INSERT'],
    });
    const launch = async () => {
      const child = await spawnDeliveringDaemon(t);
      daemons.push(child);
      return child;
    };

    const first = await launch();
    await waitForStreaming(t);
    // About 2,000 changes a second: 100 rows every 50 ms, 16,000 in all.
    const TOTAL = 16_000;
    const writing = (async () => {
      for (let from = 1; from <= TOTAL; from += 100) {
        await writer.query(`INSERT INTO shop_master.items SELECT g, 'n' FROM generate_series($1::int, $1::int + 99) g`, [from]);
        await sleep(50);
      }
    })();
    // Stop it once deliveries flow: requests are in flight and history rows are being gathered.
    while (answered.size < 3000) await sleep(10);
    const exited = new Promise<number | null>((resolve) => first.once('exit', (code) => resolve(code)));
    first.kill('SIGTERM');
    expect(await exited, 'the tailer exits cleanly').to.equal(0);
    const atStop = answered.size;
    const second = await launch();
    await writing;
    const deadline = Date.now() + 120_000;
    while (answered.size < TOTAL) {
      if (Date.now() > deadline) throw new Error(`only ${answered.size} of ${TOTAL} changes arrived`);
      await sleep(100);
    }
    await sleep(1000); // anything sent twice would arrive about now
    const twice = [...answered].filter(([, n]) => n > 1).map(([id]) => id);
    console.log(`      ${atStop} changes answered before the stop, ${TOTAL} in all, ${twice.length} answered twice`);
    expect(twice, 'changes the receiver had acknowledged, sent again').to.deep.equal([]);
    expect(atStop, 'the stop came mid-stream').to.be.below(TOTAL);
    second.kill('SIGTERM');
  });
});
