import type { ChildProcess } from 'node:child_process';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { expect } from 'chai';
import pg from 'pg';
import { freePort, startEmbeddedPostgres, type EmbeddedCluster } from '../../src/core/db/embedded.js';
import { migrate } from '../../src/core/db/migrate.js';
import { createPool } from '../../src/core/db/pool.js';
import { eventually } from '../delivery/support.js';
import { startTestApi, type TestApi } from '../support/api.js';
import { HttpClient } from '../support/http.js';
import { TestReceiver } from '../support/receiver.js';
import { startStandby, type Standby } from '../support/standby.js';
import { insertSubscription } from '../support/subscriptions.js';
import { testCertificates } from '../support/tls.js';
import { killDaemon, spawnTailerDaemon } from '../tailer/support.js';

// Failover slots, the must-show of issue 30: a Postgres 18 primary with a physical standby that
// synchronises slots; changes flow while the primary dies and the standby is promoted; the tailer,
// pointed at the new primary, reads on from the synchronised copy of its slot. Every change the
// new primary has is delivered (at least once), and nothing it does not have (the primary's
// synchronized_standby_slots kept the tailer behind the standby).

const STANDBY_SLOT = 'walgate_test_standby';

describe('reliability: failover slots survive a promotion (Postgres 17+)', function () {
  this.timeout(300_000);
  let dir: string;
  let primary: EmbeddedCluster | undefined;
  let standby: Standby | undefined;
  let t: TestApi | undefined;
  let receiver: TestReceiver;
  let daemon: ChildProcess | undefined;

  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'walgate-failover-'));
    await chmod(dir, 0o755); // the clusters below run as `postgres` when the tests run as root
    primary = await startEmbeddedPostgres({ dir: path.join(dir, 'primary'), database: 'walgate' });
    const pool = createPool(primary.url, { max: 1 });
    await migrate(pool).finally(() => pool.end());
    t = await startTestApi({
      database: { name: 'walgate', url: primary.url, drop: async () => undefined },
      env: { WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' },
    });
    await t.provision({ projectId: 'shop', name: 'master' });
    await t.ctx.pool.query('CREATE TABLE shop_master.items (id int PRIMARY KEY, note text)');
    receiver = new TestReceiver();
    await receiver.start();
  });
  after(async () => {
    await killDaemon(daemon);
    await t?.close().catch(() => undefined);
    await receiver?.stop();
    await standby?.cluster.stop('immediate').catch(() => undefined);
    await primary?.stop('immediate').catch(() => undefined);
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('promotes the standby mid-stream: the tailer resumes from the synchronised slot and every change is delivered', async () => {
    standby = await startStandby(primary!, path.join(dir, 'primary'), path.join(dir, 'standby'), STANDBY_SLOT);
    // The primary lets failover slots' readers go no further than the standby has flushed.
    await t!.ctx.pool.query(`ALTER SYSTEM SET synchronized_standby_slots = '${STANDBY_SLOT}'`);
    await t!.ctx.pool.query('SELECT pg_reload_conf()');
    const webhook = await insertSubscription(t!.ctx, {
      projectId: 'shop',
      environment: 'master',
      schema: 'shop_master',
      table: 'items',
      events: ['INSERT'],
      url: `${receiver.url}/items`,
    });
    const slot = await t!.ctx.pool.query<{ slot_name: string; failover: boolean }>(
      `SELECT slot_name, failover FROM pg_replication_slots WHERE slot_type = 'logical'`,
    );
    expect(slot.rows, 'the slot is created as a failover slot').to.deep.equal([{ slot_name: 'walgate_walgate', failover: true }]);

    const caFile = path.join(t!.config.dataDir, 'failover-ca.pem');
    await writeFile(caFile, (await testCertificates()).ca);
    const daemonEnv = { WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true', NODE_EXTRA_CA_CERTS: caFile };
    const opsPort = await freePort();
    daemon = await spawnTailerDaemon(t!, {
      ...daemonEnv,
      DATABASE_URL: primary!.url,
      TAILER_PORT: String(opsPort),
      TAILER_STANDBY_URL: standby.cluster.url,
    });

    // The application writes one row per transaction, to whichever server is the primary.
    let target = primary!.url;
    let next = 1;
    let writing = true;
    const writer = (async () => {
      let client: pg.Client | undefined;
      while (writing) {
        try {
          if (!client) {
            client = new pg.Client({ connectionString: target });
            client.on('error', () => undefined);
            await client.connect();
          }
          await client.query('INSERT INTO shop_master.items VALUES ($1, $2) ON CONFLICT (id) DO NOTHING', [next, 'x']);
          next++;
          await sleep(5);
        } catch {
          // The primary went away (the row may or may not have committed: the new primary's table says).
          await client?.end().catch(() => undefined);
          client = undefined;
          await sleep(100);
        }
      }
      await client?.end().catch(() => undefined);
    })();

    // /readyz and the gauge say a standby keeps a synchronised copy (asked of the standby itself).
    const ops = new HttpClient(`http://127.0.0.1:${opsPort}`);
    const ready = await eventually(
      () => ops.get('/readyz').catch(() => undefined),
      (r) => r?.body?.checks?.find((c: { name: string }) => c.name === 'slot_failover')?.detail?.ready === true,
      90_000,
    );
    expect(ready!.body.checks.find((c: { name: string }) => c.name === 'slot_failover')).to.deep.include({ state: 'ok' });
    expect((await ops.get('/metrics')).text).to.match(/walgate_slot_failover_ready 1/);
    await eventually(
      async () => receiver.requests.length,
      (n) => n >= 200,
      60_000,
    );

    // The primary dies with changes in flight; its tailer goes with it; the standby is promoted.
    await primary!.stop('immediate');
    await killDaemon(daemon);
    await standby.promote();
    target = standby.cluster.url;
    daemon = await spawnTailerDaemon(t!, { ...daemonEnv, DATABASE_URL: standby.cluster.url });
    const promoted = new pg.Client({ connectionString: standby.cluster.url });
    await promoted.connect();
    try {
      const written = next;
      await eventually(
        async () => next,
        (n) => n >= written + 200,
        60_000,
      );
      writing = false;
      await writer;

      const { rows } = await promoted.query<{ id: number }>('SELECT id FROM shop_master.items ORDER BY id');
      const expected = rows.map((r) => r.id);
      expect(expected.length).to.be.greaterThan(400);
      const deliveredIds = () => new Set(receiver.requests.map((r) => JSON.parse(r.body).record.id as number));
      await eventually(
        async () => deliveredIds(),
        (got) => expected.every((id) => got.has(id)),
        90_000,
      ).catch((err: Error) => {
        const got = deliveredIds();
        throw new Error(
          `${err.message.slice(0, 80)}; missing: ${expected
            .filter((id) => !got.has(id))
            .slice(0, 20)
            .join(', ')}`,
        );
      });
      const got = deliveredIds();
      // Nothing the new primary does not have was delivered: the tailer never read past the standby.
      expect([...got].filter((id) => !expected.includes(id))).to.deep.equal([]);
      // Read from the synchronised copy: no slot was recreated, no gap was recorded.
      const gaps = await promoted.query('SELECT reason FROM walgate.capture_gaps');
      expect(gaps.rows).to.deep.equal([]);
      const copy = await promoted.query<{ failover: boolean; synced: boolean }>(
        'SELECT failover, synced FROM pg_replication_slots WHERE slot_name = $1',
        ['walgate_walgate'],
      );
      expect(copy.rows).to.deep.equal([{ failover: true, synced: true }]);
      const duplicates = receiver.requests.length - got.size;
      console.log(`      (failover: ${expected.length} rows, ${got.size} delivered, ${duplicates} delivered twice; webhook ${webhook})`);
    } finally {
      writing = false;
      await writer;
      await promoted.end();
    }
  });
});
