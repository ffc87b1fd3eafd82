import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { expect } from 'chai';
import pg from 'pg';
import { Daemon } from '../../scripts/bench/processes.js';
import { startCountingReceiver, type CountingReceiver } from '../../scripts/bench/receiver.js';
import { hashPassword } from '../../src/auth/passwords.js';
import { loadConfig } from '../../src/core/config.js';
import { createContext, type Context } from '../../src/core/context.js';
import { freePort } from '../../src/core/db/embedded.js';
import { createLogger } from '../../src/core/log.js';
import { provisionEnvironment } from '../../src/auth/provision.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { insertSubscription } from '../support/subscriptions.js';
import { testCertificates } from '../support/tls.js';

// `npm run test:chaos`: both daemons as child processes under mixed auth traffic and 500 changed
// rows a second for SOAK_SECONDS (600 by hand; CI runs a shorter one). Every change must reach the
// subscriber, signature checked, each event once, and no auth call may get a 5xx; on runs of
// 400 s or more their memory must stay flat too (after a warm-up, the fitted trend over the run
// grows less than 10 %). Retention runs with windows of a few seconds: the history tables' rows
// and bytes on disk must stay flat instead of growing with the traffic.

const SECONDS = Number(process.env.SOAK_SECONDS ?? 600);
const JUDGED_FROM_SECONDS = 400;
const PASSWORD = 'correct horse battery staple 42';
/** Delivered history and dead letters are kept this long in the soak. */
const RETENTION_MS = 5000;
const HISTORY_TABLES = ['deliveries', 'delivery_attempts', 'events', 'sessions', 'refresh_tokens'] as const;

/** Mean of the second half of a series over the mean of its first half. */
export function halfRatio(values: number[]): number {
  const half = Math.floor(values.length / 2);
  const mean = (xs: number[]) => xs.reduce((s, x) => s + x, 0) / xs.length;
  const [first, second] = [mean(values.slice(0, half)), mean(values.slice(values.length - half))];
  // A table that stays empty (the stream engine writes no event or attempt row for a change
  // delivered at its first try) is as flat as a table can be.
  if (first === 0) return second === 0 ? 1 : Number.POSITIVE_INFINITY;
  return second / first;
}

/** Growth of a series over its span, from a least-squares line: (fitted end − fitted start) / fitted start. */
export function trendGrowth(samples: Array<[t: number, v: number]>): number {
  const n = samples.length;
  const mt = samples.reduce((s, [t]) => s + t, 0) / n;
  const mv = samples.reduce((s, [, v]) => s + v, 0) / n;
  const slope = samples.reduce((s, [t, v]) => s + (t - mt) * (v - mv), 0) / samples.reduce((s, [t]) => s + (t - mt) ** 2, 0);
  const t0 = samples[0]![0];
  const t1 = samples[n - 1]![0];
  const start = mv + slope * (t0 - mt);
  return (slope * (t1 - t0)) / start;
}

async function rssMb(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? 0) / 1024;
}

describe(`chaos: soak, ${SECONDS} s of mixed traffic`, function () {
  this.timeout((SECONDS + 240) * 1000);
  let dir: string;
  let db: TestDatabase;
  let ctx: Context;
  let receiver: CountingReceiver;
  let api: Daemon;
  let tailer: Daemon;

  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'walgate-soak-'));
    db = await createTestDatabase();
    const kek = randomBytes(32).toString('base64');
    const secret = `soak-secret-${randomBytes(8).toString('hex')}`;
    ctx = await createContext(loadConfig({ KEY_ENCRYPTION_KEY: kek, DATA_DIR: dir, LOG_LEVEL: 'warn' }), db.url, {
      log: createLogger('warn'),
    });
    await provisionEnvironment(ctx, { projectId: 'soak', name: 'master' });
    await ctx.pool.query('CREATE TABLE soak_master.events (id bigserial PRIMARY KEY, kind text, payload text)');
    // Space freed by pruning is reused once autovacuum has visited the table. Its default round
    // (1 min) is nothing next to windows of days, but next to this soak's windows of seconds it
    // would be most of a short run.
    await ctx.pool.query(`ALTER SYSTEM SET autovacuum_naptime = '5s'`);
    await ctx.pool.query('SELECT pg_reload_conf()');
    const { ca, cert, key } = await testCertificates();
    await writeFile(path.join(dir, 'ca.pem'), ca);
    // The benchmark's subscriber: checks every signature and counts event ids, in a process of its own.
    receiver = await startCountingReceiver(secret, { cert, key });
    await receiver.reset(['/soak']);
    await insertSubscription(ctx, {
      projectId: 'soak',
      environment: 'master',
      schema: 'soak_master',
      table: 'events',
      events: ['INSERT'],
      url: `${receiver.url}/soak`,
      secret,
    });
    const env = {
      ...process.env,
      NODE_ENV: 'production',
      DATABASE_URL: db.url,
      KEY_ENCRYPTION_KEY: kek,
      DATA_DIR: dir,
      LOG_LEVEL: 'warn',
      HOST: '127.0.0.1',
      TRUST_PROXY: '1',
      WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
      NODE_EXTRA_CA_CERTS: path.join(dir, 'ca.pem'),
      WEBHOOK_RETENTION_MS: String(RETENTION_MS),
      WEBHOOK_DEAD_RETENTION_MS: String(RETENTION_MS),
    };
    const apiPort = await freePort();
    api = await Daemon.start('api', { ...env, PORT: String(apiPort) }, `http://127.0.0.1:${apiPort}/metrics`);
    const tailerPort = await freePort();
    tailer = await Daemon.start('tailer', { ...env, TAILER_PORT: String(tailerPort) }, `http://127.0.0.1:${tailerPort}/metrics`);
  });
  after(async () => {
    await api?.stop();
    await tailer?.stop();
    receiver?.close();
    await ctx?.close();
    await db?.drop();
    await rm(dir, { recursive: true, force: true });
  });

  it('keeps both daemons flat in memory and delivers every change once', async () => {
    const apiUrl = api.metricsUrl.replace('/metrics', '');
    const hash = await hashPassword(PASSWORD);
    const emails = Array.from({ length: 20 }, (_, i) => `soak-${i}@example.com`);
    for (const email of emails) {
      await ctx.pool.query(
        `INSERT INTO walgate.users (project_id, environment, email, password_hash, email_verified_at, created_at, updated_at)
         VALUES ('soak', 'master', $1, $2, now(), now(), now())`,
        [email, hash],
      );
    }
    const until = Date.now() + SECONDS * 1000;
    let inserted = 0;
    let authFailures = 0;
    let authCalls = 0;
    const writer = new pg.Client({ connectionString: db.url });
    await writer.connect();
    // 500 rows a second: 50 every 100 ms, each batch its own transaction.
    const writing = (async () => {
      for (let tick = 1; Date.now() < until; tick++) {
        await writer.query(`INSERT INTO soak_master.events (kind, payload) SELECT 'tick', md5(g::text) FROM generate_series(1, 50) g`);
        inserted += 50;
        const wait = until - SECONDS * 1000 + tick * 100 - Date.now();
        if (wait > 0) await sleep(wait);
      }
    })();
    // Mixed auth traffic: each worker logs in, reads /auth/me a few times, refreshes, logs out.
    const call = async (pathname: string, init: RequestInit, ip: string) => {
      authCalls++;
      const res = await fetch(`${apiUrl}${pathname}`, {
        ...init,
        headers: {
          'content-type': 'application/json',
          'x-project-id': 'soak',
          'x-forwarded-for': ip,
          ...(init.headers as Record<string, string>),
        },
      });
      if (res.status >= 500) authFailures++;
      return res;
    };
    const authing = Promise.all(
      emails.slice(0, 4).map(async (email, w) => {
        for (let round = 0; Date.now() < until; round++) {
          const ip = `10.9.${w}.${round % 250}`;
          const login = await call('/auth/login', { method: 'POST', body: JSON.stringify({ email, password: PASSWORD }) }, ip);
          const pair = (await login.json()) as { accessToken: string; refreshToken: string };
          const auth = { authorization: `Bearer ${pair.accessToken}` };
          for (let i = 0; i < 5; i++) await (await call('/auth/me', { headers: auth }, ip)).arrayBuffer();
          const refreshed = (await (
            await call('/auth/refresh-token', { method: 'POST', body: JSON.stringify({ refreshToken: pair.refreshToken }) }, ip)
          ).json()) as { accessToken: string };
          await (
            await call('/auth/logout', { method: 'POST', headers: { authorization: `Bearer ${refreshed.accessToken}` } }, ip)
          ).arrayBuffer();
        }
      }),
    );
    const samples: Record<'api' | 'tailer', Array<[number, number]>> = { api: [], tailer: [] };
    const history: Array<Record<string, { rows: number; bytes: number }>> = [];
    const started = Date.now();
    while (Date.now() < until) {
      await sleep(Math.min(5000, Math.max(0, until - Date.now())));
      const at = (Date.now() - started) / 1000;
      samples.api.push([at, await rssMb(api.child.pid!)]);
      samples.tailer.push([at, await rssMb(tailer.child.pid!)]);
      history.push(await historySize(ctx));
    }
    await Promise.all([writing, authing]);
    await writer.end();

    const deadline = Date.now() + 180_000;
    let stats = await receiver.stats();
    while (stats.unique < inserted && Date.now() < deadline) {
      await sleep(500);
      stats = await receiver.stats();
    }
    const report = Object.fromEntries(
      (['api', 'tailer'] as const).map((name) => {
        const kept = samples[name].slice(Math.floor(samples[name].length / 4)); // after the warm-up
        return [
          name,
          {
            firstMb: Math.round(kept[0]![1]),
            lastMb: Math.round(kept[kept.length - 1]![1]),
            trendGrowth: Math.round(trendGrowth(kept) * 1000) / 10,
          },
        ];
      }),
    );
    console.log(
      `      soak: ${SECONDS} s, ${inserted} rows, ${stats.unique} delivered (${stats.received - stats.unique} repeats), ${authCalls} auth calls; RSS ${JSON.stringify(report)}`,
    );
    // History: judged after the first window and pass (before that the tables only fill up).
    const judged = history.slice(Math.ceil((2 * RETENTION_MS) / 5000));
    const growth = Object.fromEntries(
      HISTORY_TABLES.map((t) => [
        t,
        {
          rows: [judged[0]![t]!.rows, judged[judged.length - 1]![t]!.rows],
          kB: [judged[0]![t]!.bytes >> 10, judged[judged.length - 1]![t]!.bytes >> 10],
          rowRatio: Math.round(halfRatio(judged.map((h) => h[t]!.rows)) * 100) / 100,
          byteRatio: Math.round(halfRatio(judged.map((h) => h[t]!.bytes)) * 100) / 100,
        },
      ]),
    );
    console.log(`      history (first → last sample; second half / first half): ${JSON.stringify(growth)}`);
    expect(authFailures, 'auth calls answered 5xx').to.equal(0);
    expect(stats.badSignatures).to.equal(0);
    expect(stats.unique, 'every change delivered').to.equal(inserted);
    // Memory is judged on long runs only: for the first minutes V8's heaps grow towards their
    // working size (a 90 s run sees +10–20 %), so a short run's trend says nothing about leaks.
    // Pruning keeps up: no delivered history stays longer than the window, three passes and 10 s.
    expect(
      judged.map((h) => h.overdue!.rows),
      'delivered history kept past its window',
    ).to.satisfy((ns: number[]) => ns.every((n) => n === 0));
    // Kept, the history would grow with the run: its second half would average about 1.8 times the
    // first (3 times, counted from zero). Pruned, it stays the size of the window — judged when
    // sending kept up with the writes: a backlog of pending deliveries (never pruned) grows the
    // same tables, and says something about the machine, not about retention.
    const backlog = Math.max(...judged.map((h) => h.pending!.rows));
    if (backlog <= (RETENTION_MS / 1000) * 500) {
      for (const t of ['deliveries', 'delivery_attempts', 'events'] as const) {
        expect(growth[t]!.rowRatio, `${t} rows, second half / first half`).to.be.below(1.4);
        expect(growth[t]!.byteRatio, `${t} bytes on disk, second half / first half`).to.be.below(1.4);
      }
    } else {
      console.log(`      history size not judged: sending fell behind (up to ${backlog} deliveries pending)`);
    }
    if (SECONDS >= JUDGED_FROM_SECONDS) {
      for (const [name, r] of Object.entries(report)) expect(r.trendGrowth, `${name} RSS trend over the run (%)`).to.be.below(10);
    } else {
      console.log(`      RSS trend not judged: runs of ${JUDGED_FROM_SECONDS} s or more are (npm run test:chaos runs 600)`);
    }
  });
});

/** Rows and bytes on disk (table, indexes, TOAST) of each history table; pending deliveries; delivered ones overdue for pruning. */
async function historySize(ctx: Context): Promise<Record<string, { rows: number; bytes: number }>> {
  const out: Record<string, { rows: number; bytes: number }> = {};
  for (const t of HISTORY_TABLES) {
    const { rows } = await ctx.pool.query(
      `SELECT (SELECT count(*) FROM walgate.${t})::int AS rows, pg_total_relation_size('walgate.${t}')::bigint AS bytes`,
    );
    out[t] = { rows: rows[0].rows, bytes: Number(rows[0].bytes) };
  }
  const { rows } = await ctx.pool.query(
    `SELECT count(*) FILTER (WHERE status IN ('pending', 'retrying'))::int AS pending,
            count(*) FILTER (WHERE status = 'delivered' AND delivered_at < now() - $1 * interval '1 ms')::int AS overdue
       FROM walgate.deliveries`,
    [RETENTION_MS * 2.5 + 10_000],
  );
  out.pending = { rows: rows[0].pending, bytes: 0 };
  out.overdue = { rows: rows[0].overdue, bytes: 0 };
  return out;
}
