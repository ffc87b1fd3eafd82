import type { ChildProcess } from 'node:child_process';
import { expect } from 'chai';
import type { WalTailer } from '../../src/tailer/tailer.js';
import { startTestApi, type TestApi } from '../support/api.js';
import { insertSubscription } from '../support/subscriptions.js';
import { killDaemon, spawnTailerDaemon, startTailer, waitForDeliveries, waitForLeader, waitUntilCaughtUp } from './support.js';

/** Waits for a daemon to end; its exit signal (a crash point kills it with SIGKILL). */
function exited(child: ChildProcess, timeoutMs = 60_000): Promise<NodeJS.Signals | number | null> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(child.signalCode ?? child.exitCode);
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('the tailer daemon did not reach its crash point')), timeoutMs);
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      resolve(signal ?? code);
    });
  });
}

// kill -9 between a slot's loss and its gap's record: the gap is recorded first (pending), the
// slot created after, so a crash at either point leaves the gap recorded, and once only.
describe('tailer: a crash while a lost slot is replaced never loses the gap record', function () {
  this.timeout(120_000);
  let t: TestApi;
  let tailer: WalTailer | undefined;
  let daemon: ChildProcess | undefined;

  before(async () => {
    t = await startTestApi();
    await t.provision({ projectId: 'shop', name: 'master' });
  });
  after(async () => {
    await killDaemon(daemon);
    await tailer?.stop();
    await t?.close();
  });

  const gaps = async () =>
    (
      await t.ctx.pool.query<{ reason: string; from_lsn: string; to_lsn: string | null; webhook_ids: string[] }>(
        'SELECT reason, from_lsn::text, to_lsn::text, webhook_ids FROM walgate.capture_gaps ORDER BY to_time',
      )
    ).rows;
  const slotOf = async (slotName: string) =>
    (
      await t.ctx.pool.query<{ confirmed_flush_lsn: string }>(
        'SELECT confirmed_flush_lsn::text FROM pg_replication_slots WHERE slot_name = $1',
        [slotName],
      )
    ).rows[0];

  it('SIGKILL after the gap is recorded, then after the new slot is created: one gap, ended where the new slot starts', async () => {
    await t.ctx.pool.query('CREATE TABLE shop_master.orders (id int PRIMARY KEY)');
    const wh = await insertSubscription(t.ctx, { projectId: 'shop', environment: 'master', schema: 'shop_master', table: 'orders' });
    tailer = startTailer(t.ctx, t.database.url);
    await waitForLeader(tailer);
    await t.ctx.pool.query('INSERT INTO shop_master.orders VALUES (1)');
    await waitForDeliveries(t.ctx, 1, wh);
    await waitUntilCaughtUp(t.ctx, tailer);
    const slotName = tailer.status().slotName;
    await tailer.stop();
    tailer = undefined;
    await t.ctx.pool.query('SELECT pg_drop_replication_slot($1)', [slotName]);
    await t.ctx.pool.query('INSERT INTO shop_master.orders VALUES (2)'); // lost with the slot

    daemon = await spawnTailerDaemon(t, { WALGATE_CRASH_AT: 'slot-gap-recorded', LOG_LEVEL: 'fatal' });
    expect(await exited(daemon)).to.equal('SIGKILL');
    let found = await gaps();
    expect(
      found.map((g) => [g.reason, g.to_lsn, g.webhook_ids]),
      'recorded before the slot exists',
    ).to.deep.equal([['slot_missing', null, [wh]]]);
    expect(await slotOf(slotName)).to.equal(undefined);

    daemon = await spawnTailerDaemon(t, { WALGATE_CRASH_AT: 'slot-created', LOG_LEVEL: 'fatal' });
    expect(await exited(daemon)).to.equal('SIGKILL');
    found = await gaps();
    expect(found, 'no second record for the same loss').to.have.length(1);
    expect(found[0]!.to_lsn, 'still pending: the crash came before its end was known').to.equal(null);
    const slot = await slotOf(slotName);
    expect(slot, 'the new slot exists').to.not.equal(undefined);

    tailer = startTailer(t.ctx, t.database.url);
    await waitForLeader(tailer, 30_000);
    found = await gaps();
    expect(found).to.have.length(1);
    expect(found[0]!.to_lsn, 'ended where the new slot starts').to.equal(slot!.confirmed_flush_lsn);
    // Capture goes on from the new slot.
    await t.ctx.pool.query('INSERT INTO shop_master.orders VALUES (3)');
    const after = await waitForDeliveries(t.ctx, 2, wh);
    expect(after.map((d) => d.payload.record.id)).to.deep.equal([1, 3]);
  });
});
