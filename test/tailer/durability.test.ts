import type { ChildProcess } from 'node:child_process';
import { freePort } from '../../src/core/db/embedded.js';
import { setTimeout as sleep } from 'node:timers/promises';
import { expect } from 'chai';
import pg from 'pg';
import type { WalTailer } from '../../src/tailer/tailer.js';
import { startTestApi, type TestApi } from '../support/api.js';
import { insertSubscription } from '../support/subscriptions.js';
import { spawnTailerDaemon, startTailer, waitForDeliveries, waitForLeader } from './support.js';

async function slotPosition(t: TestApi, slot: string): Promise<string> {
  const { rows } = await t.ctx.pool.query('SELECT confirmed_flush_lsn::text AS c FROM pg_replication_slots WHERE slot_name = $1', [slot]);
  return rows[0].c;
}

async function lsnLessOrEqual(t: TestApi, a: string, b: string): Promise<boolean> {
  return (await t.ctx.pool.query('SELECT $1::pg_lsn <= $2::pg_lsn AS ok', [a, b])).rows[0].ok;
}

describe('tailer durability', function () {
  this.timeout(120_000);
  let t: TestApi;
  let writer: pg.Client;

  beforeEach(async () => {
    t = await startTestApi();
    await t.provision({ projectId: 'shop', name: 'master' });
    writer = new pg.Client({ connectionString: t.database.url });
    await writer.connect();
    await writer.query('CREATE TABLE shop_master.orders (id int PRIMARY KEY, note text)');
  });
  afterEach(async () => {
    await writer?.end();
    await t?.close();
  });

  it('never acknowledges a change whose deliveries are not written yet', async () => {
    const tailer: WalTailer = startTailer(t.ctx, t.database.url, { statusIntervalMs: 50 });
    const locker = new pg.Client({ connectionString: t.database.url });
    await locker.connect();
    try {
      await waitForLeader(tailer);
      const wh = await insertSubscription(t.ctx, { projectId: 'shop', environment: 'master', schema: 'shop_master', table: 'orders' });
      await writer.query(`INSERT INTO shop_master.orders VALUES (0, 'warm-up')`);
      await waitForDeliveries(t.ctx, 1, wh);
      // Writes to walgate.deliveries now block: the tailer receives the change but cannot store it.
      await locker.query('BEGIN');
      await locker.query('LOCK TABLE walgate.deliveries IN ACCESS EXCLUSIVE MODE');
      const before = (await t.ctx.pool.query('SELECT pg_current_wal_insert_lsn()::text AS l')).rows[0].l;
      await writer.query(`INSERT INTO shop_master.orders VALUES (1, 'blocked')`);
      // Unrelated WAL and keepalives meanwhile must not move the slot past the blocked change either.
      await writer.query('CREATE TABLE public.noise (x int); INSERT INTO public.noise SELECT generate_series(1, 5000)');
      await sleep(1000);
      const held = await slotPosition(t, tailer.status().slotName);
      expect(await lsnLessOrEqual(t, held, before), `slot at ${held} passed the unwritten change at ${before}`).to.equal(true);
      await locker.query('ROLLBACK');
      await waitForDeliveries(t.ctx, 2, wh);
      const until = Date.now() + 5000;
      while (await lsnLessOrEqual(t, await slotPosition(t, tailer.status().slotName), before)) {
        if (Date.now() > until) throw new Error('slot did not advance once the change was written');
        await sleep(50);
      }
    } finally {
      await locker.end();
      await tailer.stop();
    }
  });

  it('loses nothing and keeps every id when the tailer is killed with SIGKILL three times', async function () {
    const wh = await insertSubscription(t.ctx, { projectId: 'shop', environment: 'master', schema: 'shop_master', table: 'orders' });
    let child: ChildProcess | undefined;
    const launch = async () => {
      // Deliveries would go to https://127.0.0.1:1 and fail: keep the sender's retries far away.
      child = await spawnTailerDaemon(t, { WEBHOOK_RETRY_DELAYS_MS: '0,600000' });
    };
    const kill = async () => {
      const c = child!;
      const exited = new Promise((resolve) => c.once('exit', resolve));
      c.kill('SIGKILL');
      await exited;
    };

    const total = 20_000;
    const perTransaction = 10;
    const killedAt: number[] = [];
    await launch();
    const writing = (async () => {
      for (let start = 0; start < total; start += perTransaction) {
        await writer.query(`INSERT INTO shop_master.orders SELECT g, 'row ' || g FROM generate_series($1::int, $2::int) g`, [
          start + 1,
          start + perTransaction,
        ]);
      }
    })();
    const count = async () => (await t.ctx.pool.query('SELECT count(*)::int AS n FROM walgate.deliveries')).rows[0].n as number;
    for (let i = 0; i < 3; i++) {
      // Kill a daemon at work: once it has written something since it was launched (a fixed
      // pause hit daemons still starting up on a loaded machine), and at a varying moment.
      const before = killedAt.at(-1) ?? 0;
      const until = Date.now() + 20_000;
      while ((await count()) <= before && Date.now() < until) await sleep(25);
      await sleep(100 + i * 150);
      killedAt.push(await count());
      await kill();
      await sleep(100);
      await launch();
    }
    await writing;
    // The kills must have hit a tailer in the middle of its work, or this test shows nothing.
    expect(
      killedAt.some((n) => n > 0 && n < total),
      `deliveries at each kill: ${killedAt}`,
    ).to.equal(true);
    try {
      const until = Date.now() + 60_000;
      for (;;) {
        const { rows } = await t.ctx.pool.query('SELECT count(*)::int AS n FROM walgate.deliveries WHERE webhook_id = $1', [wh]);
        if (rows[0].n >= total) break;
        if (Date.now() > until) throw new Error(`only ${rows[0].n} of ${total} deliveries after the kills`);
        await sleep(200);
      }
      // One delivery per row and per event: a change read twice kept its id (else there would be two).
      const { rows } = await t.ctx.pool.query(
        `SELECT count(*)::int AS deliveries, count(DISTINCT d.event_id)::int AS events,
                count(DISTINCT e.record[array_position(e.columns, 'id')])::int AS rows_seen,
                bool_and(d.event_id ~ '^evt_[0-9A-F]{16}_[0-9]{6}$') AS ids_well_formed
           FROM walgate.deliveries d JOIN walgate.events e ON e.id = d.event_id WHERE d.webhook_id = $1`,
        [wh],
      );
      expect(rows[0]).to.deep.equal({ deliveries: total, events: total, rows_seen: total, ids_well_formed: true });
      // Ids follow the WAL: within a transaction the index counts up with the rows.
      const order = await t.ctx.pool.query(
        `SELECT bool_and(ok) AS ok FROM (
           SELECT e.record[array_position(e.columns, 'id')]::int
                  > lag(e.record[array_position(e.columns, 'id')]::int, 1, 0) OVER (ORDER BY d.event_id) AS ok
             FROM walgate.deliveries d JOIN walgate.events e ON e.id = d.event_id WHERE d.webhook_id = $1) x`,
        [wh],
      );
      expect(order.rows[0].ok).to.equal(true);
    } finally {
      await kill().catch(() => undefined);
    }
  });

  it('a standby daemon takes the slot over each time the leader is SIGKILLed: nothing lost, ids unchanged', async function () {
    const wh = await insertSubscription(t.ctx, { projectId: 'shop', environment: 'master', schema: 'shop_master', table: 'orders' });
    interface Daemon {
      child: ChildProcess;
      port: number;
    }
    const launch = async (): Promise<Daemon> => {
      const port = await freePort();
      // Deliveries go to https://127.0.0.1:1 and fail: no retries meanwhile.
      const child = await spawnTailerDaemon(t, { TAILER_PORT: String(port), WEBHOOK_RETRY_DELAYS_MS: '0,600000' });
      return { child, port };
    };
    const role = async (d: Daemon): Promise<string | undefined> => {
      try {
        const res = await fetch(`http://127.0.0.1:${d.port}/readyz`, { signal: AbortSignal.timeout(2000) });
        const body = (await res.json()) as { checks: Array<{ name: string; detail?: { role?: string } }> };
        return body.checks.find((c) => c.name === 'tailer')?.detail?.role;
      } catch {
        return undefined; // not listening yet
      }
    };
    const inRole = async (pair: Daemon[], wanted: string, timeoutMs: number): Promise<Daemon> => {
      const until = Date.now() + timeoutMs;
      for (;;) {
        for (const d of pair) if ((await role(d)) === wanted) return d;
        if (Date.now() > until) throw new Error(`no tailer is ${wanted} after ${timeoutMs} ms`);
        await sleep(50);
      }
    };
    const kill = async (d: Daemon) => {
      if (d.child.exitCode !== null) return;
      const exited = new Promise((resolve) => d.child.once('exit', resolve));
      d.child.kill('SIGKILL');
      await exited;
    };

    const pair = [await launch(), await launch()];
    const total = 12_000;
    let written = 0;
    const writing = (async () => {
      for (let start = 0; start < total; start += 10) {
        await writer.query(`INSERT INTO shop_master.orders SELECT g, 'row ' || g FROM generate_series($1::int, $2::int) g`, [
          start + 1,
          start + 10,
        ]);
        written = start + 10;
      }
    })();
    const takeovers: number[] = [];
    const deliveredAtKill: number[] = [];
    try {
      let leader = await inRole(pair, 'leader', 15_000);
      for (let i = 0; i < 3; i++) {
        const standby = await inRole(
          pair.filter((d) => d !== leader),
          'standby',
          15_000,
        );
        await sleep(500);
        deliveredAtKill.push((await t.ctx.pool.query('SELECT count(*)::int AS n FROM walgate.deliveries')).rows[0].n);
        const killedAt = Date.now();
        await kill(leader);
        leader = await inRole([standby], 'leader', 15_000);
        takeovers.push(Date.now() - killedAt);
        pair.splice(pair.indexOf(pair.find((d) => d !== standby)!), 1, await launch()); // the killed one comes back as the standby
      }
      await writing;
      expect(
        deliveredAtKill.some((n) => n > 0 && n < total),
        `deliveries at each kill: ${deliveredAtKill} (of ${written} written)`,
      ).to.equal(true);
      const until = Date.now() + 60_000;
      for (;;) {
        const { rows } = await t.ctx.pool.query('SELECT count(*)::int AS n FROM walgate.deliveries WHERE webhook_id = $1', [wh]);
        if (rows[0].n >= total) break;
        if (Date.now() > until) throw new Error(`only ${rows[0].n} of ${total} deliveries after the takeovers`);
        await sleep(200);
      }
      const { rows } = await t.ctx.pool.query(
        `SELECT count(*)::int AS deliveries, count(DISTINCT d.event_id)::int AS events,
                count(DISTINCT e.record[array_position(e.columns, 'id')])::int AS rows_seen
           FROM walgate.deliveries d JOIN walgate.events e ON e.id = d.event_id WHERE d.webhook_id = $1`,
        [wh],
      );
      // One event per row: a change read again by the new leader kept its id (else a row would have two).
      expect(rows[0]).to.deep.equal({ deliveries: total, events: total, rows_seen: total });
      console.log(`      takeover after SIGKILL: ${takeovers.join(', ')} ms`);
      expect(Math.max(...takeovers), 'the standby leads within seconds').to.be.below(10_000);
    } finally {
      await Promise.all(pair.map(kill));
    }
  });

  it('delivers every change to a real receiver at least once, ids unchanged, through three SIGKILLs of the daemon', async function () {
    const { TestReceiver } = await import('../support/receiver.js');
    const { testCertificates } = await import('../support/tls.js');
    const { writeFile } = await import('node:fs/promises');
    const receiver = new TestReceiver();
    await receiver.start();
    const caFile = `${t.config.dataDir}/test-ca.pem`;
    await writeFile(caFile, (await testCertificates()).ca);
    await insertSubscription(t.ctx, {
      projectId: 'shop',
      environment: 'master',
      schema: 'shop_master',
      table: 'orders',
      url: `${receiver.url}/hook`,
      events: ['INSERT'],
    });
    let child: ChildProcess | undefined;
    const launch = async () => {
      // NODE_EXTRA_CA_CERTS: how an operator trusts a private CA.
      child = await spawnTailerDaemon(t, { WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true', NODE_EXTRA_CA_CERTS: caFile });
    };
    const kill = async () => {
      const c = child!;
      if (c.exitCode !== null) return;
      const exited = new Promise((resolve) => c.once('exit', resolve));
      c.kill('SIGKILL');
      await exited;
    };
    const total = 20_000;
    await launch();
    const writing = (async () => {
      for (let start = 0; start < total; start += 10) {
        await writer.query(`INSERT INTO shop_master.orders SELECT g, 'row ' || g FROM generate_series($1::int, $2::int) g`, [
          start + 1,
          start + 10,
        ]);
      }
    })();
    const receivedAt: number[] = [];
    try {
      for (let i = 0; i < 3; i++) {
        // Kill a daemon at work: once it has sent something since its launch (a fixed pause hit
        // daemons still starting up on a loaded machine), and at a varying moment.
        const before = receiver.requests.length;
        const until = Date.now() + 20_000;
        while (receiver.requests.length <= before && Date.now() < until) await sleep(25);
        await sleep(100 + i * 150);
        receivedAt.push(receiver.requests.length);
        await kill();
        await sleep(100);
        await launch();
      }
      await writing;
      expect(
        receivedAt.some((n) => n > 0 && n < total),
        `requests at each kill: ${receivedAt}`,
      ).to.equal(true);
      const idsByRow = new Map<number, Set<string>>();
      const until = Date.now() + 90_000;
      while (idsByRow.size < total) {
        if (Date.now() > until) throw new Error(`only ${idsByRow.size} of ${total} rows delivered`);
        await sleep(200);
        for (const r of receiver.requests.splice(0)) {
          const body = JSON.parse(r.body);
          const ids = idsByRow.get(body.record.id) ?? new Set<string>();
          ids.add(body.id);
          idsByRow.set(body.record.id, ids);
        }
      }
      // Every row arrived, each under exactly one event id however often it was sent.
      expect([...idsByRow.values()].every((ids) => ids.size === 1)).to.equal(true);
      expect(new Set([...idsByRow.values()].map((ids) => [...ids][0])).size).to.equal(total);
    } finally {
      await kill().catch(() => undefined);
      await receiver.stop();
    }
  });
});
