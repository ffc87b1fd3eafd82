import { expect } from 'chai';
import { startTestApi, type TestApi } from '../support/api.js';
import { startTailer, waitForLeader } from './support.js';
import type { WalTailer } from '../../src/tailer/tailer.js';
import { registerTailerGauges, startTailerOps } from '../../src/ops/tailer-ops.js';
import { closeServer } from '../../src/http/server.js';
import { HttpClient } from '../support/http.js';

// The slot's failover setting on the bundled Postgres 18, without a standby: an existing slot is
// altered to match TAILER_SLOT_FAILOVER when the tailer starts, and /readyz and the gauge say
// plainly that no standby keeps a copy (the promotion itself: test/reliability/failover.test.ts).

async function slotFailover(t: TestApi): Promise<boolean | undefined> {
  const { rows } = await t.ctx.pool.query<{ failover: boolean }>(
    `SELECT failover FROM pg_replication_slots WHERE database = current_database()`,
  );
  return rows[0]?.failover;
}

async function withTailer<T>(t: TestApi, fn: (tailer: WalTailer, ops: HttpClient) => Promise<T>): Promise<T> {
  const tailer = startTailer(t.ctx, t.database.url);
  await waitForLeader(tailer, 20_000);
  registerTailerGauges(t.ctx, tailer, undefined);
  const started = await startTailerOps(t.ctx, tailer, 0, '127.0.0.1');
  try {
    return await fn(tailer, new HttpClient(started.url));
  } finally {
    await closeServer(started.server, 1000);
    await tailer.stop();
  }
}

const failoverCheck = (body: { checks: Array<{ name: string }> }) => body.checks.find((c) => c.name === 'slot_failover') as any;

describe('tailer: the slot as a failover slot (Postgres 17+)', function () {
  this.timeout(60_000);
  const apis: TestApi[] = [];
  after(async () => {
    for (const t of apis.reverse()) await t.close();
  });

  it('alters an existing slot to match TAILER_SLOT_FAILOVER at start, both ways', async () => {
    const t = await startTestApi();
    apis.push(t);
    // A slot as an older walgate (or Postgres 16 before an upgrade) left it.
    await t.ctx.pool.query(`SELECT pg_create_logical_replication_slot('walgate_' || current_database(), 'pgoutput')`);
    expect(await slotFailover(t)).to.equal(false);
    await withTailer(t, async () => expect(await slotFailover(t)).to.equal(true));
    const off = await startTestApi({ database: t.database, env: { TAILER_SLOT_FAILOVER: 'false' } });
    apis.push(off);
    await withTailer(off, async () => expect(await slotFailover(off)).to.equal(false));
  });

  it('without a standby: /readyz reports why the slot would not survive a failover, ready stays 200, the gauge is 0', async () => {
    const t = await startTestApi();
    apis.push(t);
    await withTailer(t, async (_tailer, ops) => {
      expect(await slotFailover(t), 'a new slot is a failover slot').to.equal(true);
      const ready = await ops.get('/readyz');
      expect(ready.status).to.equal(200);
      expect(ready.body.status).to.equal('ready');
      expect(failoverCheck(ready.body)).to.deep.equal({
        name: 'slot_failover',
        state: 'ok',
        ok: true,
        detail: {
          supported: true,
          enabled: true,
          ready: false,
          basis: 'none',
          standbySlotsInactive: [],
          reason: 'synchronized_standby_slots is not set on the primary',
        },
      });
      expect((await ops.get('/metrics')).text).to.match(/walgate_slot_failover_ready 0/);
    });
  });

  it('with TAILER_STANDBY_URL that is no standby: degraded, saying so, never failed', async () => {
    const first = await startTestApi();
    apis.push(first);
    const t = await startTestApi({ database: first.database, env: { TAILER_STANDBY_URL: first.database.url } });
    apis.push(t);
    await withTailer(t, async (_tailer, ops) => {
      const ready = await ops.get('/readyz');
      expect(ready.status).to.equal(200);
      expect(ready.body.status).to.equal('degraded');
      const check = failoverCheck(ready.body);
      expect(check).to.deep.include({ state: 'degraded', ok: true });
      expect(check.detail).to.deep.include({ ready: false, basis: 'standby', reason: 'TAILER_STANDBY_URL is not a standby' });
    });
  });
});
