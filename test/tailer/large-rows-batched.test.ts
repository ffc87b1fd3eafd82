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

// Batches count toward the tailer's byte budget (TAILER_MAX_HELD_BYTES, 8 MiB here as by default):
// 1 MB rows to a subscription with `batch: {maxEvents: 1000, maxBytes: 10 MiB}` — gathered by the
// stream, and re-sent whole by the retry queue — keep the tailer daemon under 300 MB, every row
// delivered: a batch body is never larger than half the budget, and weighs on it while in flight.

async function rssOf(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8').catch(() => '');
  const kb = /VmRSS:\s+(\d+) kB/.exec(status)?.[1];
  return kb ? Number(kb) * 1024 : 0;
}

describe('tailer daemon: 1 MB rows in batches of up to 1000', function () {
  this.timeout(300_000);
  let t: TestApi;
  let writer: pg.Client;
  let receiver: TestReceiver;
  let caFile: string;
  let child: ChildProcess | undefined;
  const stop = async () => {
    const c = child;
    child = undefined;
    if (!c || c.exitCode !== null) return;
    const exited = new Promise((resolve) => c.once('exit', resolve));
    c.kill('SIGKILL');
    await exited;
  };

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
    await stop();
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
      TAILER_MAX_HELD_BYTES: String(8 * 1024 ** 2),
      ...extra,
    });
  };
  const sampleRss = async () => {
    let peak = 0;
    while (child && child.exitCode === null) {
      peak = Math.max(peak, await rssOf(child.pid!));
      await sleep(100);
    }
    return peak;
  };
  /** Distinct event ids received, and the largest request body. */
  const received = () => {
    const ids = new Set<string>();
    let largest = 0;
    for (const r of receiver.requests) {
      largest = Math.max(largest, Buffer.byteLength(r.body));
      for (const e of (JSON.parse(r.body) as { events: Array<{ id: string }> }).events) ids.add(e.id);
    }
    return { ids, largest };
  };
  const fill = async (table: string, total: number) => {
    await writer.query(`CREATE TABLE shop_master.${table} (id int PRIMARY KEY, body text)`);
    const wh = await insertSubscription(t.ctx, {
      projectId: 'shop',
      environment: 'master',
      schema: 'shop_master',
      table,
      url: `${receiver.url}/hook`,
      events: ['INSERT'],
      batch: { maxEvents: 1000, maxBytes: Number(process.env.LARGE_ROWS_BATCH_BYTES ?? 10 * 1024 * 1024), maxWaitMs: 500 },
    });
    for (let start = 1; start <= total; start += 10) {
      await writer.query(
        `INSERT INTO shop_master.${table} SELECT g, repeat(md5(g::text), 32768) FROM generate_series($1::int, $2::int) g`,
        [start, start + 9],
      );
    }
    return wh;
  };
  const until = async (what: string, ok: () => Promise<boolean> | boolean, ms = 240_000) => {
    const end = Date.now() + ms;
    while (!(await ok())) {
      if (Date.now() > end) throw new Error(`not within ${ms} ms: ${what}`);
      await sleep(200);
    }
  };

  it('the stream: 150 rows of 1 MB against a receiver that answers after 1 s, in batches within half the budget; under 300 MB', async () => {
    const total = 150;
    await fill('blobs', total);
    receiver.behave = () => ({ status: 200, after: sleep(1000) });
    await launch();
    const sampling = sampleRss();
    await until(`${total} rows delivered`, () => received().ids.size >= total);
    await stop();
    const peak = await sampling;
    const { largest } = received();
    console.log(
      `      batched: ${receiver.requests.length} requests for ${total} x 1 MB rows, largest body ${Math.round(largest / 1024)} KiB, peak RSS ${Math.round(peak / 1024 ** 2)} MB`,
    );
    expect(largest, 'a batch body within half the byte budget').to.be.at.most(4 * 1024 * 1024);
    expect(peak).to.be.greaterThan(0);
    expect(peak, 'peak RSS').to.be.below(300 * 1024 ** 2);
  });

  it('the retry queue: the same rows parked in batches and re-sent whole; under 300 MB', async () => {
    const total = 150;
    const wh = await fill('parked_blobs', total);
    const count = async (where: string) =>
      (await t.ctx.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM walgate.deliveries WHERE webhook_id = $1 AND ${where}`, [wh]))
        .rows[0]!.n;
    receiver.behave = () => ({ status: 503 });
    const settings = { WEBHOOK_RETRY_DELAYS_MS: '0,600000,1000,1000', WEBHOOK_BREAKER_FAILURES: '100000' };
    await launch(settings);
    await until('every row parked', async () => (await count(`status IN ('pending', 'retrying')`)) >= total, 120_000);
    await stop();
    expect(await count('batch_id IS NOT NULL'), 'parked with their batch').to.be.greaterThan(0);
    await t.ctx.pool.query('UPDATE walgate.deliveries SET next_attempt_at = now() WHERE webhook_id = $1', [wh]);
    receiver.requests.length = 0;
    receiver.behave = () => ({ status: 200, after: sleep(1000) });
    await launch(settings);
    const sampling = sampleRss();
    await until(`${total} parked rows delivered`, async () => (await count(`status = 'delivered'`)) >= total);
    await stop();
    const peak = await sampling;
    console.log(`      batched, retry queue: ${receiver.requests.length} requests, peak RSS ${Math.round(peak / 1024 ** 2)} MB`);
    // Each batch re-sent carries the events it was parked with.
    const { rows } = await t.ctx.pool.query<{ batch_id: string; ids: string[] }>(
      `SELECT batch_id, array_agg(event_id ORDER BY event_id) AS ids FROM walgate.deliveries WHERE webhook_id = $1 AND batch_id IS NOT NULL GROUP BY 1`,
      [wh],
    );
    const byBatch = new Map(rows.map((r) => [r.batch_id, r.ids]));
    for (const r of receiver.requests) {
      const ids = (JSON.parse(r.body) as { events: Array<{ id: string }> }).events.map((e) => e.id);
      expect(ids, r.headers['webhook-id']).to.deep.equal(byBatch.get(r.headers['webhook-id']!));
    }
    expect(peak).to.be.greaterThan(0);
    expect(peak, 'peak RSS').to.be.below(300 * 1024 ** 2);
  });
});
