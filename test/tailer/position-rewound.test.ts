import { randomBytes } from 'node:crypto';
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { expect } from 'chai';
import pg from 'pg';
import { loadConfig } from '../../src/core/config.js';
import { createContext, type Context } from '../../src/core/context.js';
import { startEmbeddedPostgres, type EmbeddedCluster } from '../../src/core/db/embedded.js';
import { migrate } from '../../src/core/db/migrate.js';
import { createLogger } from '../../src/core/log.js';
import { provisionEnvironment } from '../../src/auth/provision.js';
import { startApi, type RunningApi } from '../../src/main/api-app.js';
import type { WalTailer } from '../../src/tailer/tailer.js';
import { createManagementToken } from '../../src/webhooks/management-tokens.js';
import { HttpClient } from '../support/http.js';
import { CapturedLogs } from '../support/logs.js';
import { insertSubscription } from '../support/subscriptions.js';
import { startTailer, waitForLeader } from './support.js';

/** A file-level copy that keeps owners and modes (the cluster runs as another user when tests run as root). */
const copyDir = (from: string, to: string) => promisify(execFile)('cp', ['-a', from, to]);

// A cluster of its own: this test restores Postgres's data directory from a copy taken earlier
// (what a restore from a file-level backup, or a failover to a standby that was behind, does).
describe('tailer: a position that went backwards is a gap', function () {
  this.timeout(180_000);
  let dir: string;
  let cluster: EmbeddedCluster;
  let ctx: Context;
  let tailer: WalTailer | undefined;
  let api: RunningApi;
  let management: HttpClient;
  let wh: string;
  const stateFile = () => path.join(dir, 'tailer-state.json');

  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'walgate-rewind-'));
    cluster = await startEmbeddedPostgres({ dir, settings: { fsync: 'off' } });
    const config = loadConfig({ KEY_ENCRYPTION_KEY: randomBytes(32).toString('base64'), DATA_DIR: dir, LOG_LEVEL: 'info' });
    ctx = await createContext(config, cluster.url, { log: createLogger('info', new CapturedLogs()) });
    await migrate(ctx.pool);
    await provisionEnvironment(ctx, { projectId: 'shop', name: 'master' });
    await ctx.pool.query('CREATE TABLE shop_master.orders (id int PRIMARY KEY, pad text)');
    wh = await insertSubscription(ctx, { projectId: 'shop', environment: 'master', schema: 'shop_master', table: 'orders' });
    api = await startApi(ctx, 0, '127.0.0.1');
    management = new HttpClient(api.url, {
      authorization: `Bearer ${(await createManagementToken(ctx.pool, 'shop')).token}`,
      'x-project-id': 'shop',
      environment: 'master',
    });
  });
  after(async () => {
    await api?.stop();
    await tailer?.stop();
    await ctx?.close();
    await cluster?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  const write = async (from: number, to: number) => {
    const c = new pg.Client({ connectionString: cluster.url });
    await c.connect();
    await c.query(`INSERT INTO shop_master.orders SELECT g, repeat('x', 500) FROM generate_series($1::int, $2::int) g`, [from, to]);
    const { rows } = await c.query<{ lsn: string }>('SELECT pg_current_wal_lsn()::text AS lsn');
    await c.end();
    return rows[0]!.lsn;
  };
  const delivered = async () =>
    (await ctx.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM walgate.deliveries WHERE webhook_id = $1', [wh])).rows[0]!.n;
  const until = async (what: string, check: () => Promise<boolean>, timeoutMs = 60_000) => {
    const end = Date.now() + timeoutMs;
    while (!(await check().catch(() => false))) {
      if (Date.now() > end) throw new Error(`timed out waiting for ${what}: ${JSON.stringify(tailer?.status())}`);
      await sleep(100);
    }
  };
  const openGaps = async () => {
    const res = await management.get('/api/rest/_gaps?open=true');
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
    return res.body.gaps as Array<Record<string, any>>;
  };
  /** Stops Postgres, keeps a copy of its data directory (the backup), starts it again. */
  const backup = async (name: string) => {
    await cluster.stop();
    await copyDir(path.join(dir, 'pg'), path.join(dir, name));
    cluster = await startEmbeddedPostgres({ dir, settings: { fsync: 'off' } });
  };
  /** Stops Postgres and puts the backup's data directory in place of its own. */
  const restore = async (name: string) => {
    await cluster.stop();
    await rm(path.join(dir, 'pg'), { recursive: true, force: true });
    await copyDir(path.join(dir, name), path.join(dir, 'pg'));
  };

  it('a running tailer that reconnects to a restored database records the gap: /api/rest/_gaps, /readyz degraded, the gauge', async () => {
    tailer = startTailer(ctx, cluster.url, { retryMaxMs: 300, stateFile: stateFile() });
    await waitForLeader(tailer);
    await write(1, 20);
    await until('the first 20 deliveries', async () => (await delivered()) === 20);
    await backup('backup-1');
    await write(21, 200);
    await until('all 200 deliveries', async () => (await delivered()) === 200);
    const processed = tailer.status().durableLsn!;
    await sleep(500); // the state file is written with the status interval
    expect(JSON.parse(await readFile(stateFile(), 'utf8')).lsn).to.be.a('string');

    await restore('backup-1');
    cluster = await startEmbeddedPostgres({ dir, settings: { fsync: 'off' } });
    await until('the rewind gap', async () => (await openGaps()).length === 1);
    const [gap] = await openGaps();
    expect(gap).to.include({ reason: 'position_rewound', acknowledgedAt: null });
    expect(gap!.webhookIds).to.deep.equal([wh]);
    const lsn = (text: string) => BigInt(`0x${text.split('/')[0]}`) * 2n ** 32n + BigInt(`0x${text.split('/')[1]}`);
    expect(lsn(gap!.toLsn) >= lsn(processed), `${gap!.toLsn} covers what was processed (${processed})`).to.equal(true);
    expect(lsn(gap!.fromLsn) < lsn(gap!.toLsn)).to.equal(true);
    expect(await delivered(), 'the restored database knows only the first deliveries').to.equal(20);
    const ready = await new HttpClient(api.url).get('/readyz');
    expect(ready.body.status).to.equal('degraded');
    expect(ready.body.checks).to.deep.include({ name: 'capture_gaps', state: 'degraded', ok: true, detail: { open: 1 } });
    expect((await new HttpClient(api.url).get('/metrics')).text).to.match(/walgate_capture_gaps_open 1/);

    // Capture goes on in the restored history, and the rewind is recorded once.
    await write(1001, 1010);
    await until('deliveries after the restore', async () => (await delivered()) === 30);
    expect(await openGaps()).to.have.length(1);
    expect((await management.post(`/api/rest/_gaps/${gap!.id}/acknowledge`)).status).to.equal(200);
  });

  it('a tailer started after the restore remembers through TAILER_STATE_FILE; without the file a restart has no memory', async () => {
    await backup('backup-2');
    await write(2001, 2200);
    await until('the 200 new deliveries', async () => (await delivered()) === 230);
    await sleep(500);
    await tailer!.stop();
    tailer = undefined;
    await restore('backup-2');
    cluster = await startEmbeddedPostgres({ dir, settings: { fsync: 'off' } });

    // No memory (no file): nothing to compare with, nothing recorded. The docs say so.
    const forgetful = startTailer(ctx, cluster.url, { retryMaxMs: 300 });
    await waitForLeader(forgetful, 30_000);
    await forgetful.stop();
    expect(await openGaps()).to.deep.equal([]);

    tailer = startTailer(ctx, cluster.url, { retryMaxMs: 300, stateFile: stateFile() });
    await waitForLeader(tailer, 30_000);
    const gaps = await openGaps();
    expect(gaps).to.have.length(1);
    expect(gaps[0]).to.include({ reason: 'position_rewound' });
    await write(3001, 3001);
    await until('capture after the restore', async () => (await delivered()) === 31);
  });
});
