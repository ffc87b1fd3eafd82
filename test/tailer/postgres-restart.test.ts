import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { expect } from 'chai';
import pg from 'pg';
import { loadConfig } from '../../src/config.js';
import { createContext, type Context } from '../../src/context.js';
import { startEmbeddedPostgres, type EmbeddedCluster } from '../../src/db/embedded.js';
import { migrate } from '../../src/db/migrate.js';
import { createLogger } from '../../src/log.js';
import { provisionEnvironment } from '../../src/projects/provision.js';
import { startApi, type RunningApi } from '../../src/http/api.js';
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
    ctx = await createContext(config, cluster.url, { log: createLogger('info', new CapturedLogs()) });
    await migrate(ctx.pool);
    await provisionEnvironment(ctx, { projectId: 'shop', name: 'master' });
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
});
