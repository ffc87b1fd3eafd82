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
import type { WalTailer } from '../../src/tailer/tailer.js';
import { CapturedLogs } from '../support/logs.js';
import { insertSubscription } from '../support/subscriptions.js';
import { startTailer, waitForLeader } from './support.js';

// A cluster of its own: this test stops and starts Postgres under the tailer.
describe('tailer across a Postgres restart', function () {
  this.timeout(120_000);
  let dir: string;
  let cluster: EmbeddedCluster;
  let ctx: Context;
  let tailer: WalTailer;

  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'walgate-restart-'));
    cluster = await startEmbeddedPostgres({ dir, settings: { fsync: 'off' } });
    const config = loadConfig({ KEY_ENCRYPTION_KEY: randomBytes(32).toString('base64'), DATA_DIR: dir, LOG_LEVEL: 'info' });
    ctx = await createContext(config, cluster.url, { log: createLogger('info', new CapturedLogs()) });
    await migrate(ctx.pool);
    await provisionEnvironment(ctx, { projectId: 'shop', name: 'master' });
    await ctx.pool.query('CREATE TABLE shop_master.orders (id int PRIMARY KEY)');
  });
  after(async () => {
    await tailer?.stop();
    await ctx?.close();
    await cluster?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  it('reconnects by itself and delivers every change made before, during and after', async () => {
    const wh = await insertSubscription(ctx, { projectId: 'shop', environment: 'master', schema: 'shop_master', table: 'orders' });
    tailer = startTailer(ctx, cluster.url, { retryMaxMs: 300 });
    await waitForLeader(tailer);
    const write = async (from: number, to: number) => {
      const c = new pg.Client({ connectionString: cluster.url });
      await c.connect();
      await c.query('INSERT INTO shop_master.orders SELECT generate_series($1::int, $2::int)', [from, to]);
      await c.end();
    };
    await write(1, 100);
    await cluster.stop();
    await sleep(500); // the tailer's sessions fail and back off meanwhile
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
  });
});
