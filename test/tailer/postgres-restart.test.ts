import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { expect } from 'chai';
import pg from 'pg';
import { loadConfig } from '../../src/core/config.js';
import { createContext, type Context } from '../../src/core/context.js';
import { startEmbeddedPostgres, type EmbeddedCluster } from '../../src/core/db/embedded.js';
import { migrate } from '../../src/core/db/migrate.js';
import { createPool } from '../../src/core/db/pool.js';
import { createLogger } from '../../src/core/log.js';
import { provisionEnvironment } from '../../src/auth/provision.js';
import { startApi, type RunningApi } from '../../src/main/api-app.js';
import type { WalTailer } from '../../src/tailer/tailer.js';
import { HttpClient } from '../support/http.js';
import { CapturedLogs } from '../support/logs.js';
import { insertSubscription } from '../support/subscriptions.js';
import { startTailer, waitForLeader } from './support.js';

// A cluster of its own: this test stops and starts Postgres under the tailer.
describe('tailer and api across a Postgres restart', function () {
  this.timeout(120_000);
  let dir: string;
  let cluster: EmbeddedCluster;
  let ctx: Context;
  let tailer: WalTailer;
  let api: RunningApi;

  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'walgate-restart-'));
    cluster = await startEmbeddedPostgres({ dir, settings: { fsync: 'off' } });
    const config = loadConfig({ KEY_ENCRYPTION_KEY: randomBytes(32).toString('base64'), DATA_DIR: dir, LOG_LEVEL: 'info' });
    ctx = await createContext(config, cluster.url, {
      log: createLogger('info', new CapturedLogs()),
      // The steady clients below ask far more often than the platform's limits allow.
      rateLimits: {
        login: { name: 'login', points: 100_000, durationSeconds: 60 },
        management: { name: 'management', points: 100_000, durationSeconds: 60 },
      },
    });
    await migrate(ctx.pool);
    // Steady login traffic, not a lockout test: the one client's failed logins (an unknown address
    // is counted like a known one) must not lock it out midway.
    await provisionEnvironment(ctx, { projectId: 'shop', name: 'master', lockoutThreshold: 1_000_000 });
    await ctx.pool.query('CREATE TABLE shop_master.orders (id int PRIMARY KEY)');
    api = await startApi(ctx, 0, '127.0.0.1');
  });
  after(async () => {
    await api?.stop();
    await tailer?.stop();
    await ctx?.close();
    await cluster?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  it('the api answers 503 meanwhile; both reconnect by themselves; every change made before, during and after is delivered', async () => {
    const wh = await insertSubscription(ctx, { projectId: 'shop', environment: 'master', schema: 'shop_master', table: 'orders' });
    tailer = startTailer(ctx, cluster.url, { retryMaxMs: 300 });
    await waitForLeader(tailer);
    const write = async (from: number, to: number) => {
      const c = new pg.Client({ connectionString: cluster.url });
      await c.connect();
      await c.query('INSERT INTO shop_master.orders SELECT generate_series($1::int, $2::int)', [from, to]);
      await c.end();
    };
    const http = new HttpClient(api.url, { 'x-project-id': 'shop' });
    const login = () => http.post('/auth/login', { email: 'nobody@example.com', password: 'correct horse battery staple 42' });
    expect((await login()).status).to.equal(401);
    await write(1, 100);
    await cluster.stop();
    // Meanwhile the api answers at once: 503 in the envelope, not a hang, not a 500.
    for (const request of [login, () => http.get('/readyz')]) {
      const started = Date.now();
      const res = await request();
      expect(res.status).to.equal(503);
      expect(Date.now() - started).to.be.below(5000);
      if (res.body.error) expect(res.body.error).to.equal('SERVICE_UNAVAILABLE');
    }
    await sleep(300); // the tailer's sessions fail and back off meanwhile
    cluster = await startEmbeddedPostgres({ dir, settings: { fsync: 'off' } });
    await write(101, 200);
    const until = Date.now() + 30_000;
    for (;;) {
      const { rows } = await ctx.pool
        .query('SELECT count(*)::int AS n, count(DISTINCT event_id)::int AS e FROM walgate.deliveries WHERE webhook_id = $1', [wh])
        .catch(() => ({ rows: [{ n: 0, e: 0 }] }));
      if (rows[0].n >= 200) {
        expect(rows[0]).to.deep.equal({ n: 200, e: 200 });
        break;
      }
      if (Date.now() > until) throw new Error(`only ${rows[0].n} of 200 deliveries after the restart: ${JSON.stringify(tailer.status())}`);
      await sleep(100);
    }
    expect(tailer.status().role).to.equal('leader');
    expect((await login()).status, 'the api is back without a restart').to.equal(401);
  });

  it('under a steady write load and steady requests, through a clean stop and a crash: every row delivered once, every answer in time', async () => {
    await ctx.pool.query('CREATE TABLE shop_master.steady (id int PRIMARY KEY)');
    const wh = await insertSubscription(ctx, { projectId: 'shop', environment: 'master', schema: 'shop_master', table: 'steady' });
    tailer ??= startTailer(ctx, cluster.url, { retryMaxMs: 300 });
    await waitForLeader(tailer);
    const { createManagementToken } = await import('../../src/webhooks/management-tokens.js');
    const management = new HttpClient(api.url, {
      authorization: `Bearer ${(await createManagementToken(ctx.pool, 'shop')).token}`,
      'x-project-id': 'shop',
      environment: 'master',
    });
    const http = new HttpClient(api.url, { 'x-project-id': 'shop' });

    let running = true;
    // The writer: 5 rows a transaction, every 10 ms, through its own pool; failures while
    // Postgres is away are expected (those rows may or may not exist: the table is the truth).
    const writes = createPool(cluster.url, { max: 1 });
    let next = 1;
    let failedWrites = 0;
    const writing = (async () => {
      while (running) {
        const from = next;
        next += 5;
        await writes
          .query('INSERT INTO shop_master.steady SELECT generate_series($1::int, $2::int)', [from, from + 4])
          .catch(() => failedWrites++);
        await sleep(10);
      }
    })();
    // The clients: a login and a management read every 25 ms, each with its status and time.
    const answers: Array<{ what: string; status: number; ms: number; error?: string }> = [];
    const asking = (async () => {
      while (running) {
        for (const [what, call] of [
          [
            'login',
            () =>
              http.post('/auth/login', { email: 'nobody@example.com', password: 'correct horse battery staple 42' }, { timeoutMs: 15_000 }),
          ],
          ['list', () => management.get('/api/rest/_webhooks', { timeoutMs: 15_000 })],
        ] as const) {
          const started = Date.now();
          const res = await call().catch((err: Error) => ({ status: 0, body: { error: err.name } }));
          answers.push({ what, status: res.status, ms: Date.now() - started, error: (res.body as { error?: string } | undefined)?.error });
        }
        await sleep(25);
      }
    })();

    try {
      for (const mode of ['fast', 'immediate'] as const) {
        await sleep(1500);
        await cluster.stop(mode);
        await sleep(1500);
        cluster = await startEmbeddedPostgres({ dir, settings: { fsync: 'off' } });
      }
      await sleep(2000);
    } finally {
      running = false;
      await writing;
      await asking;
      await writes.end();
    }
    const { rows: written } = await ctx.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM shop_master.steady');
    expect(written[0]!.n, 'rows were written before, between and after the restarts').to.be.above(500);
    expect(failedWrites, 'writes failed while Postgres was away').to.be.above(0);
    const until = Date.now() + 60_000;
    for (;;) {
      const { rows } = await ctx.pool.query(
        `SELECT count(*)::int AS deliveries, count(DISTINCT d.event_id)::int AS events,
                count(DISTINCT e.record[array_position(e.columns, 'id')])::int AS rows_seen
           FROM walgate.deliveries d JOIN walgate.events e ON e.id = d.event_id WHERE d.webhook_id = $1`,
        [wh],
      );
      if (rows[0].rows_seen >= written[0]!.n) {
        // Every row in the table, exactly once, each under one id.
        expect(rows[0]).to.deep.equal({ deliveries: written[0]!.n, events: written[0]!.n, rows_seen: written[0]!.n });
        break;
      }
      if (Date.now() > until)
        throw new Error(`${rows[0].rows_seen} of ${written[0]!.n} rows delivered: ${JSON.stringify(tailer.status())}`);
      await sleep(200);
    }
    // The api answered every request in time: its normal answer, or 503 SERVICE_UNAVAILABLE — never a 500, never a hang.
    const normal: Record<string, number> = { login: 401, list: 200 };
    const odd = answers.filter((a) => a.status !== normal[a.what] && !(a.status === 503 && a.error === 'SERVICE_UNAVAILABLE'));
    expect(odd.length, `answers other than the normal one or 503: ${JSON.stringify(odd.slice(0, 8))}`).to.equal(0);
    expect(answers.filter((a) => a.status === 503).length, 'some requests came while Postgres was away').to.be.above(0);
    const slowest = Math.max(...answers.map((a) => a.ms));
    console.log(
      `      ${written[0]!.n} rows delivered once each; ${answers.length} requests, ${answers.filter((a) => a.status === 503).length} answered 503, slowest ${slowest} ms`,
    );
    expect(slowest, 'the slowest answer (ms)').to.be.below(6000);
    expect(
      answers.slice(-10).every((a) => a.status === normal[a.what]),
      'back to normal by itself',
    ).to.equal(true);
  });
});
