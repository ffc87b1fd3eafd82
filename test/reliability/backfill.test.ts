import type { ChildProcess } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { expect } from 'chai';
import pg from 'pg';
import { managementClient, startTestApi, type TestApi } from '../support/api.js';
import { TestReceiver } from '../support/receiver.js';
import { killDaemon, spawnDeliveringDaemon } from '../tailer/support.js';

// The demonstration of backfills: a table of BACKFILL_TEST_ROWS rows (100,000 unless told)
// is backfilled to a row-ordered subscription while a writer updates random rows, and the tailer
// daemon is SIGKILLed in the middle of it. Afterwards every row's last delivered state is the
// table's final state, no row ever went back to an older version at the receiver (first arrivals,
// deduplicated by webhook-id as at-least-once asks), the backfill finished, and no tailer process
// grew past 300 MB of resident memory.

const ROWS = Number(process.env.BACKFILL_TEST_ROWS ?? 100_000);
const RSS_LIMIT = 300 * 1024 * 1024;

/** The peak resident set of a process (VmHWM), in bytes; 0 when it is gone. */
async function peakRss(pid: number | undefined): Promise<number> {
  try {
    const status = await readFile(`/proc/${pid}/status`, 'utf8');
    return Number(/VmHWM:\s+(\d+) kB/.exec(status)?.[1] ?? 0) * 1024;
  } catch {
    return 0;
  }
}

describe(`backfill of ${ROWS} rows under a concurrent writer, with a SIGKILL of the tailer`, function () {
  this.timeout(600_000);
  let t: TestApi;
  let writer: pg.Client;
  let receiver: TestReceiver;
  const daemons: ChildProcess[] = [];

  before(async () => {
    t = await startTestApi({ env: { WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' } });
    await t.provision({ projectId: 'shop', name: 'master' });
    writer = new pg.Client({ connectionString: t.database.url });
    await writer.connect();
    await writer.query('CREATE TABLE shop_master.items (id int PRIMARY KEY, version int NOT NULL, pad text NOT NULL)');
    await writer.query(`INSERT INTO shop_master.items SELECT g, 0, repeat('p', 100) FROM generate_series(1, $1::int) g`, [ROWS]);
    receiver = new TestReceiver();
    await receiver.start();
  });
  after(async () => {
    for (const d of daemons) await killDaemon(d);
    await writer?.end();
    await receiver?.stop();
    await t?.close();
  });

  it("every row's last delivered state is the table's, no row goes back, it resumes after SIGKILL, RSS ≤ 300 MB", async () => {
    // Per row, the versions in the order they first arrived; READs counted apart.
    const arrived = new Map<number, number[]>();
    const seen = new Set<string>();
    let reads = 0;
    receiver.behave = (req) => {
      const id = req.headers['webhook-id']!;
      if (!seen.has(id)) {
        seen.add(id);
        const body = JSON.parse(req.body) as { event: string; record: { id: number; version: number } };
        if (body.event === 'READ') reads++;
        const list = arrived.get(body.record.id) ?? [];
        list.push(body.record.version);
        arrived.set(body.record.id, list);
      }
      receiver.requests.length = 0; // keep the test's own memory flat
      return { status: 200 };
    };
    const api = await managementClient(t, 'shop');
    const created = await api.post('/api/rest/_webhooks', {
      projectId: 'shop',
      environment: 'master',
      table: 'items',
      events: ['INSERT', 'UPDATE', 'DELETE'],
      url: `${receiver.url}/items`,
      secret: 'whsec-backfill-reliability-0001',
      ordering: 'row',
    });
    expect(created.status, JSON.stringify(created.body)).to.equal(201);
    const wh = created.body.webhook.id as string;

    const launch = async () => {
      const child = await spawnDeliveringDaemon(t);
      daemons.push(child);
      return child;
    };
    let peak = 0;
    const sample = async (child: ChildProcess) => (peak = Math.max(peak, await peakRss(child.pid)));

    const first = await launch();
    // The writer: 20 random rows a transaction, about 1,000 rows a second at most, until told to
    // stop. Bounded: an unbounded writer outran a tailer starved of CPU by other work on the machine
    // (the tailer reads the WAL in order, so each backfill page waited behind a growing backlog of
    // updates — 7,000 rows in 300 s in one full run, 100,000 in 54 s alone).
    let writing = true;
    let updates = 0;
    const writes = (async () => {
      let state = 11;
      while (writing) {
        const ids = new Set<number>();
        while (ids.size < 20) {
          state = (Math.imul(state, 1103515245) + 12345) >>> 0;
          ids.add((state % ROWS) + 1);
        }
        await writer.query('UPDATE shop_master.items SET version = version + 1 WHERE id = ANY ($1)', [[...ids]]);
        updates += ids.size;
        await sleep(20);
      }
    })();

    const started = await api.post(`/api/rest/_webhooks/${wh}/backfill`, {});
    expect(started.status, JSON.stringify(started.body)).to.equal(202);
    const backfillId = started.body.backfill.id as string;
    const progress = async () =>
      (
        await t.ctx.pool.query<{ rows: number; state: string }>('SELECT rows::int, state FROM walgate.backfills WHERE id = $1', [
          backfillId,
        ])
      ).rows[0]!;

    // SIGKILL once about a third of the table is delivered.
    const until = Date.now() + 300_000;
    while ((await progress()).rows < ROWS / 3) {
      if (Date.now() > until) throw new Error(`backfill too slow: ${JSON.stringify(await progress())}`);
      await sample(first);
      await sleep(200);
    }
    await sample(first);
    const atKill = await progress();
    await killDaemon(first);
    const second = await launch();
    while ((await progress()).state === 'running') {
      if (Date.now() > until) throw new Error(`backfill did not finish: ${JSON.stringify(await progress())}`);
      await sample(second);
      await sleep(200);
    }
    writing = false;
    await writes;
    const done = await progress();
    expect(done.state).to.equal('done');
    expect(atKill.rows, 'killed in the middle').to.be.below(ROWS);

    // Wait until the receiver holds the table's final state, row by row.
    const table = new Map(
      (await writer.query<{ id: number; version: number }>('SELECT id, version FROM shop_master.items')).rows.map((r) => [r.id, r.version]),
    );
    const stale = () => [...table].filter(([id, version]) => arrived.get(id)?.at(-1) !== version);
    const settleBy = Date.now() + 180_000;
    while (stale().length > 0 && Date.now() < settleBy) {
      await sample(second);
      await sleep(250);
    }
    await sample(second);
    const left = stale();
    expect(
      left.length,
      `rows whose last delivered state is not the table's, e.g. ${JSON.stringify(left.slice(0, 3).map(([id, v]) => [id, v, arrived.get(id)]))}`,
    ).to.equal(0);
    const wentBack = [...arrived].filter(([, versions]) => versions.some((v, i) => i > 0 && v < versions[i - 1]!));
    expect(wentBack.length, `rows that went back: ${JSON.stringify(wentBack.slice(0, 3))}`).to.equal(0);
    // Resumed from its recorded page, not started again: the READs number the table's rows plus at
    // most the pages in flight at the kill (started again, a third of the table would come twice).
    expect(reads, 'READs first-arrived').to.be.below(ROWS + Math.max(2000, ROWS * 0.05));
    expect(peak, `peak tailer RSS ${Math.round(peak / 2 ** 20)} MB`).to.be.at.most(RSS_LIMIT);
    expect(peak).to.be.greaterThan(0);
    console.log(
      `      ${ROWS} rows: ${reads} READs first-arrived, ${updates} updates written, killed at ${atKill.rows} rows, ` +
        `peak RSS ${Math.round(peak / 2 ** 20)} MB`,
    );
  });

  it('1 MB rows: pages bounded in bytes keep the tailer under 300 MB', async () => {
    await writer.query('CREATE TABLE shop_master.blobs (id int PRIMARY KEY, body text NOT NULL)');
    await writer.query(`INSERT INTO shop_master.blobs SELECT g, repeat(chr(97 + g % 26), 1024 * 1024) FROM generate_series(1, 200) g`);
    const got = new Set<number>();
    receiver.behave = (req) => {
      got.add((JSON.parse(req.body) as { record: { id: number } }).record.id);
      receiver.requests.length = 0;
      return { status: 200 };
    };
    const api = await managementClient(t, 'shop');
    const created = await api.post('/api/rest/_webhooks', {
      projectId: 'shop',
      environment: 'master',
      table: 'blobs',
      events: ['INSERT'],
      url: `${receiver.url}/blobs`,
      secret: 'whsec-backfill-reliability-0002',
    });
    const child = await spawnDeliveringDaemon(t);
    daemons.push(child);
    const started = await api.post(`/api/rest/_webhooks/${created.body.webhook.id}/backfill`, {});
    expect(started.status).to.equal(202);
    let peak = 0;
    const until = Date.now() + 180_000;
    while (got.size < 200) {
      if (Date.now() > until) throw new Error(`only ${got.size} of 200 rows arrived`);
      peak = Math.max(peak, await peakRss(child.pid));
      await sleep(200);
    }
    peak = Math.max(peak, await peakRss(child.pid));
    expect(peak, `peak tailer RSS ${Math.round(peak / 2 ** 20)} MB`).to.be.at.most(RSS_LIMIT);
    console.log(`      200 rows of 1 MB: peak RSS ${Math.round(peak / 2 ** 20)} MB`);
  });
});
