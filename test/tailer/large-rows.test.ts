import type { ChildProcess } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { expect } from 'chai';
import pg from 'pg';
import { startTestApi, type TestApi } from '../support/api.js';
import { TestReceiver } from '../support/receiver.js';
import { insertSubscription } from '../support/subscriptions.js';
import { testCertificates } from '../support/tls.js';
import { spawnTailerDaemon } from './support.js';

/** The resident set of a process, in bytes (Linux). */
async function rssOf(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8').catch(() => '');
  const kb = /VmRSS:\s+(\d+) kB/.exec(status)?.[1];
  return kb ? Number(kb) * 1024 : 0;
}

async function stopChild(child: ChildProcess | undefined): Promise<void> {
  if (!child || child.exitCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGKILL');
  await exited;
}

// The tailer daemon against a real HTTPS receiver: memory is bounded in bytes, and a crash in
// the middle of a large transaction re-sends (with the same ids) only what was not recorded.
describe('tailer daemon: large rows and large transactions', function () {
  this.timeout(300_000);
  let t: TestApi;
  let writer: pg.Client;
  let receiver: TestReceiver;
  let caFile: string;
  let child: ChildProcess | undefined;

  before(async () => {
    t = await startTestApi();
    await t.provision({ projectId: 'shop', name: 'master' });
    writer = new pg.Client({ connectionString: t.database.url });
    await writer.connect();
    receiver = new TestReceiver();
    await receiver.start();
    caFile = `${t.config.dataDir}/test-ca.pem`;
    await writeFile(caFile, (await testCertificates()).ca);
  });
  afterEach(async () => {
    await stopChild(child);
    child = undefined;
    receiver.requests.length = 0;
    receiver.behave = () => ({ status: 200 });
    await t.ctx.pool.query('DELETE FROM walgate.webhooks');
  });
  after(async () => {
    await receiver?.stop();
    await writer?.end();
    await t?.close();
  });

  const launch = async (extra: Record<string, string> = {}) => {
    child = await spawnTailerDaemon(t, {
      WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
      NODE_EXTRA_CA_CERTS: caFile,
      WEBHOOK_RETRY_DELAYS_MS: '0,1000',
      ...extra,
    });
  };
  /** Samples the daemon's RSS until it exits; resolves to the peak. */
  const sampleRss = async () => {
    let peak = 0;
    while (child && child.exitCode === null) {
      peak = Math.max(peak, await rssOf(child.pid!));
      await sleep(100);
    }
    return peak;
  };

  const subscribe = (table: string) =>
    insertSubscription(t.ctx, {
      projectId: 'shop',
      environment: 'master',
      schema: 'shop_master',
      table,
      url: `${receiver.url}/hook`,
      events: ['INSERT'],
    });

  it('150 rows of 1 MB against a receiver that answers after 1 s: every row delivered, the tailer stays under 300 MB', async () => {
    await writer.query('CREATE TABLE shop_master.blobs (id int PRIMARY KEY, body text)');
    await subscribe('blobs');
    receiver.behave = () => ({ status: 200, after: sleep(1000) });
    const total = 150;
    // 1 MB per row (TOAST compresses it in the WAL; the tailer sees it whole).
    for (let start = 1; start <= total; start += 10) {
      await writer.query(`INSERT INTO shop_master.blobs SELECT g, repeat(md5(g::text), 32768) FROM generate_series($1::int, $2::int) g`, [
        start,
        start + 9,
      ]);
    }
    await launch();
    let peak = 0;
    const sampling = (async () => {
      while (child && child.exitCode === null) {
        peak = Math.max(peak, await rssOf(child.pid!));
        await sleep(100);
      }
    })();
    const until = Date.now() + 240_000;
    for (;;) {
      const ids = new Set(receiver.requests.map((r) => r.headers['webhook-id']));
      if (ids.size >= total) break;
      if (Date.now() > until) throw new Error(`only ${ids.size} of ${total} rows delivered`);
      await sleep(200);
    }
    const child_ = child;
    child = undefined;
    await stopChild(child_);
    await sampling;
    console.log(`      tailer peak RSS with ${total} x 1 MB rows and a 1 s receiver: ${Math.round(peak / 1024 ** 2)} MB`);
    expect(JSON.parse(receiver.requests[0]!.body).record.body).to.have.length(1024 * 1024);
    expect(peak).to.be.greaterThan(0);
    expect(peak, 'peak RSS').to.be.below(300 * 1024 ** 2);
  });

  it('SIGKILL while a 30,000-row transaction is being delivered: every change arrives, ids unchanged, duplicates counted', async () => {
    await writer.query('CREATE TABLE shop_master.bulk (id int PRIMARY KEY, v text)');
    await subscribe('bulk');
    const total = 30_000;
    await writer.query(`INSERT INTO shop_master.bulk SELECT g, 'row ' || g FROM generate_series(1, $1::int) g`, [total]);
    await launch();
    await receiver.waitFor(total / 3, 120_000);
    const beforeKill = receiver.requests.length;
    await stopChild(child);
    await launch();
    const until = Date.now() + 180_000;
    let ids: Set<string>;
    for (;;) {
      ids = new Set(receiver.requests.map((r) => r.headers['webhook-id']!));
      if (ids.size >= total) break;
      if (Date.now() > until) throw new Error(`only ${ids.size} of ${total} changes delivered`);
      await sleep(200);
    }
    const duplicates = receiver.requests.length - ids.size;
    console.log(`      SIGKILL after ${beforeKill} of ${total} deliveries: ${duplicates} duplicates`);
    expect(ids.size).to.equal(total);
    // Each change keeps its id: a duplicate is the same event id again, never a new one.
    expect([...ids].every((id) => /^evt_[0-9A-F]{16}_\d{6}$/.test(id))).to.equal(true);
    // What was recorded before the kill is not sent again: the duplicates are the deliveries in
    // flight or not yet recorded at that moment, not everything delivered so far.
    expect(duplicates, `${duplicates} duplicates after ${beforeKill} deliveries`).to.be.below(Math.max(1000, beforeKill / 4));
  });

  it('a retry-queue backlog of 150 rows of 1 MB: the worker claims within the byte budget, the tailer stays under 300 MB', async () => {
    await writer.query('CREATE TABLE shop_master.parked_blobs (id int PRIMARY KEY, body text)');
    const wh = await subscribe('parked_blobs');
    const total = 150;
    const count = async (where: string) =>
      (await t.ctx.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM walgate.deliveries WHERE webhook_id = $1 AND ${where}`, [wh]))
        .rows[0]!.n;
    // First a daemon whose every attempt fails: the stream parks each delivery in the retry queue.
    receiver.behave = () => ({ status: 503 });
    for (let start = 1; start <= total; start += 10) {
      await writer.query(
        `INSERT INTO shop_master.parked_blobs SELECT g, repeat(md5(g::text), 32768) FROM generate_series($1::int, $2::int) g`,
        [start, start + 9],
      );
    }
    const settings = { WEBHOOK_RETRY_DELAYS_MS: '0,600000,1000,1000', WEBHOOK_BREAKER_FAILURES: '100000' };
    await launch(settings);
    let until = Date.now() + 120_000;
    while ((await count(`status IN ('pending', 'retrying')`)) < total) {
      if (Date.now() > until) throw new Error(`only ${await count(`status IN ('pending', 'retrying')`)} of ${total} parked`);
      await sleep(200);
    }
    await stopChild(child);
    await t.ctx.pool.query('UPDATE walgate.deliveries SET next_attempt_at = now() WHERE webhook_id = $1', [wh]); // due now
    // Then a fresh daemon drains the backlog against a receiver that answers after 1 s: only the
    // retry queue's worker holds these rows, and its claims are bounded in bytes.
    receiver.behave = () => ({ status: 200, after: sleep(1000) });
    await launch({ ...settings, TAILER_MAX_HELD_BYTES: process.env.LARGE_ROWS_HELD_BYTES ?? String(8 * 1024 ** 2) });
    const sampling = sampleRss();
    until = Date.now() + 240_000;
    while ((await count(`status = 'delivered'`)) < total) {
      if (Date.now() > until) throw new Error(`only ${await count(`status = 'delivered'`)} of ${total} parked rows delivered`);
      await sleep(200);
    }
    const child_ = child;
    child = undefined;
    await stopChild(child_);
    const peak = await sampling;
    console.log(`      tailer peak RSS draining ${total} parked 1 MB rows through the retry queue: ${Math.round(peak / 1024 ** 2)} MB`);
    expect(await count('attempts >= 2'), 'every row went through the retry queue').to.equal(total);
    expect(peak).to.be.greaterThan(0);
    expect(peak, 'peak RSS').to.be.below(300 * 1024 ** 2);
  });
});
