import { setTimeout as sleep } from 'node:timers/promises';
import { expect } from 'chai';
import pg from 'pg';
import { DeliveryEngine } from '../../src/delivery/engine.js';
import type { WalTailer } from '../../src/tailer/tailer.js';
import { startTestApi, type TestApi } from '../support/api.js';
import { insertSubscription, setSubscriptionActive } from '../support/subscriptions.js';
import { deliveries, startTailer, waitForDeliveries, waitForLeader, waitUntilCaughtUp } from './support.js';

describe('tailer: WAL changes become deliveries', function () {
  this.timeout(30_000);
  let t: TestApi;
  let writer: pg.Client;
  let tailer: WalTailer;

  before(async () => {
    t = await startTestApi();
    await t.provision({ projectId: 'shop', name: 'master' });
    await t.provision({ projectId: 'shop', name: 'staging' });
    // A plain pg client, not the api: whoever writes, the change is captured.
    writer = new pg.Client({ connectionString: t.database.url });
    await writer.connect();
    await writer.query(`
      CREATE TABLE shop_master.orders (id int PRIMARY KEY, status text, amount numeric(10,2), note text);
      CREATE TABLE shop_staging.orders (id int PRIMARY KEY, status text, amount numeric(10,2), note text);
    `);
    tailer = startTailer(t.ctx, t.database.url);
    await waitForLeader(tailer);
  });
  after(async () => {
    await tailer?.stop();
    await writer?.end();
    await t?.close();
  });
  beforeEach(async () => {
    await t.ctx.pool.query('DELETE FROM walgate.webhooks');
    await writer.query('TRUNCATE shop_master.orders, shop_staging.orders');
  });

  const sub = (extra: Partial<Parameters<typeof insertSubscription>[1]> = {}) =>
    insertSubscription(t.ctx, { projectId: 'shop', environment: 'master', schema: 'shop_master', table: 'orders', ...extra });

  it('turns INSERT, UPDATE and DELETE into the seed payload with before and after images', async () => {
    const wh = await sub();
    await writer.query(`INSERT INTO shop_master.orders VALUES (1, 'new', 10.50, 'n')`);
    await writer.query(`UPDATE shop_master.orders SET status = 'paid' WHERE id = 1`);
    await writer.query(`DELETE FROM shop_master.orders WHERE id = 1`);
    const found = await waitForDeliveries(t.ctx, 3, wh);
    const [ins, upd, del] = found.map((d) => d.payload);
    for (const p of [ins, upd, del]) {
      expect(p.id).to.match(/^evt_[0-9A-F]{16}_\d{6}$/);
      expect(new Date(p.timestamp).toISOString()).to.equal(p.timestamp);
      expect(p).to.include({ project_id: 'shop', environment: 'master', table: 'orders' });
      expect(p.data).to.deep.equal(p.record);
    }
    expect(ins.event).to.equal('INSERT');
    expect(ins.record).to.deep.equal({ id: 1, status: 'new', amount: 10.5, note: 'n' });
    expect(found[0]!.payloadText).to.contain('"amount":10.50'); // the digits as Postgres has them
    expect(ins.old_record).to.equal(null);
    expect(ins.changed_fields).to.deep.equal([]);
    expect(upd.event).to.equal('UPDATE');
    expect(upd.record.status).to.equal('paid');
    expect(upd.old_record.status).to.equal('new');
    expect(upd.changed_fields).to.deep.equal(['status']);
    expect(del.event).to.equal('DELETE');
    expect(del.record).to.deep.equal({ id: 1, status: 'paid', amount: 10.5, note: 'n' });
    expect(del.old_record).to.deep.equal(del.record);
    expect(del.changed_fields).to.deep.equal([]);
    expect(new Set(found.map((d) => d.eventId)).size).to.equal(3);
  });

  it('gives each change of one transaction its own id, ordered by position', async () => {
    const wh = await sub();
    await writer.query('BEGIN');
    for (let i = 1; i <= 5; i++) await writer.query(`INSERT INTO shop_master.orders VALUES ($1, 'new', 1, '')`, [i]);
    await writer.query('COMMIT');
    const found = await waitForDeliveries(t.ctx, 5, wh);
    const ids = found.map((d) => d.eventId);
    const prefix = ids[0]!.slice(0, 21);
    expect(
      ids.every((id) => id.startsWith(prefix)),
      'one commit LSN',
    ).to.equal(true);
    expect(found.map((d) => d.payload.record.id)).to.deep.equal([1, 2, 3, 4, 5]);
  });

  it('applies the filter (to the deleted row for DELETE) and the field selection', async () => {
    const wh = await sub({ filter: { status: 'paid', amount: 10 }, select: ['id', 'status'] });
    await writer.query(
      `INSERT INTO shop_master.orders VALUES (1, 'new', 10, 'secret'), (2, 'paid', 10.00, 'secret'), (3, 'paid', 11, 'x')`,
    );
    await writer.query(`UPDATE shop_master.orders SET note = 'changed' WHERE id IN (1, 2)`);
    await writer.query(`DELETE FROM shop_master.orders WHERE id = 2`);
    await waitUntilCaughtUp(t.ctx, tailer);
    const found = await deliveries(t.ctx, wh);
    expect(found.map((d) => [d.eventType, d.payload.record.id])).to.deep.equal([
      ['INSERT', 2],
      ['UPDATE', 2],
      ['DELETE', 2],
    ]);
    for (const d of found) {
      expect(d.payload.record).to.have.all.keys('id', 'status');
      expect(d.payloadText).not.to.contain('secret');
    }
    expect(found[1]!.payload.old_record).to.deep.equal({ id: 2, status: 'paid' });
    expect(found[1]!.payload.changed_fields).to.deep.equal([]); // `note` changed, but is not selected
  });

  it('sends nothing for changes made while a subscription is paused, and resumes in WAL order', async () => {
    const wh = await sub();
    await setSubscriptionActive(t.ctx, wh, false);
    await writer.query(`INSERT INTO shop_master.orders VALUES (1, 'while paused', 1, '')`);
    await setSubscriptionActive(t.ctx, wh, true);
    await writer.query(`INSERT INTO shop_master.orders VALUES (2, 'after resume', 1, '')`);
    await waitUntilCaughtUp(t.ctx, tailer);
    const found = await deliveries(t.ctx, wh);
    expect(found.map((d) => d.payload.record.id)).to.deep.equal([2]);
  });

  it('starts a new subscription at its commit: earlier changes are not sent', async () => {
    await writer.query(`INSERT INTO shop_master.orders VALUES (1, 'before', 1, '')`);
    const wh = await sub();
    await writer.query(`INSERT INTO shop_master.orders VALUES (2, 'after', 1, '')`);
    await waitUntilCaughtUp(t.ctx, tailer);
    expect((await deliveries(t.ctx, wh)).map((d) => d.payload.record.id)).to.deep.equal([2]);
  });

  it('gives every subscription of a table its own copy, and none to another environment', async () => {
    const a = await sub();
    const b = await sub({ events: ['INSERT'] });
    const other = await insertSubscription(t.ctx, { projectId: 'shop', environment: 'staging', schema: 'shop_staging', table: 'orders' });
    const updatesOnly = await sub({ events: ['UPDATE'] });
    await writer.query(`INSERT INTO shop_master.orders VALUES (1, 'new', 1, '')`);
    await waitUntilCaughtUp(t.ctx, tailer);
    const all = await deliveries(t.ctx);
    expect(all.filter((d) => d.webhookId === a)).to.have.length(1);
    expect(all.filter((d) => d.webhookId === b)).to.have.length(1);
    expect(all.filter((d) => d.webhookId === other)).to.have.length(0);
    expect(all.filter((d) => d.webhookId === updatesOnly)).to.have.length(0);
    expect(all[0]!.eventId).to.equal(all[1]!.eventId);
  });

  it('stops at a deleted subscription', async () => {
    const wh = await sub();
    await t.ctx.pool.query('DELETE FROM walgate.webhooks WHERE id = $1', [wh]);
    await writer.query(`INSERT INTO shop_master.orders VALUES (1, 'new', 1, '')`);
    await waitUntilCaughtUp(t.ctx, tailer);
    expect(await deliveries(t.ctx)).to.have.length(0);
  });

  it('renders every type exactly as to_jsonb(row), with unchanged TOASTed values taken from the old row', async () => {
    await writer.query(`CREATE TABLE shop_master.rich (
      id int PRIMARY KEY, big numeric(40,20), huge bigint, at timestamptz, doc jsonb, tags text[],
      raw bytea, nothing text, long text, counter int)`);
    const wh = await sub({ table: 'rich' });
    const long = 'x'.repeat(50_000) + 'y'.repeat(50_000); // 100 KB, stored out of line (TOAST)
    await writer.query(
      `INSERT INTO shop_master.rich VALUES (1, 12345678901234567890.12345678901234567890, 9007199254740993,
         '2024-05-06 07:08:09.123456+02', '{"n": 12345678901234567890.5, "a": [1, "two"]}', '{a,"b c",NULL}',
         '\\x00ff', NULL, $1, 0)`,
      [long],
    );
    await writer.query('UPDATE shop_master.rich SET counter = 1 WHERE id = 1'); // `long` unchanged: not re-sent
    const [ins, upd] = await waitForDeliveries(t.ctx, 2, wh);
    const compare = async (payloadText: string, key: 'record' | 'old_record', expectedSql: string) => {
      const { rows } = await t.ctx.pool.query(`SELECT ($1::jsonb -> $2)::text AS actual, (${expectedSql})::text AS expected`, [
        payloadText,
        key,
      ]);
      expect(rows[0].actual).to.equal(rows[0].expected);
    };
    const rowNow = `SELECT to_jsonb(r) FROM shop_master.rich r WHERE id = 1`;
    await compare(upd!.payloadText, 'record', rowNow);
    await compare(ins!.payloadText, 'record', `SELECT (${rowNow}) || '{"counter": 0}'::jsonb`);
    await compare(upd!.payloadText, 'old_record', `SELECT (${rowNow}) || '{"counter": 0}'::jsonb`);
    expect(upd!.payload.record.long).to.have.length(100_000);
    expect(upd!.payload.changed_fields).to.deep.equal(['counter']);
    expect(ins!.payloadText).to.contain('"huge":9007199254740993');
    expect(ins!.payloadText).to.contain('"big":12345678901234567890.12345678901234567890');
  });

  it('resumes after a restart from where it stood, with the same ids and nothing twice', async () => {
    const wh = await sub();
    await writer.query(`INSERT INTO shop_master.orders VALUES (1, 'a', 1, '')`);
    await waitForDeliveries(t.ctx, 1, wh);
    await tailer.stop();
    await writer.query(`INSERT INTO shop_master.orders VALUES (2, 'written while stopped', 1, '')`);
    await setSubscriptionActive(t.ctx, wh, false); // paused after row 2: row 2 must still be sent
    await writer.query(`INSERT INTO shop_master.orders VALUES (3, 'while paused', 1, '')`);
    tailer = startTailer(t.ctx, t.database.url);
    await waitUntilCaughtUp(t.ctx, tailer);
    const found = await deliveries(t.ctx, wh);
    expect(found.map((d) => d.payload.record.id)).to.deep.equal([1, 2]);
  });

  it('writes a transaction larger than its buffer in parts, keeping memory bounded', async () => {
    await tailer.stop();
    const engine = new DeliveryEngine(t.ctx, { maxHeld: 100, disableSubscription: async () => false });
    tailer = startTailer(t.ctx, t.database.url, { sink: engine });
    await waitForLeader(tailer);
    const wh = await sub({ events: ['INSERT'] });
    await writer.query(`INSERT INTO shop_master.orders SELECT g, 'bulk', g, '' FROM generate_series(1, 2500) g`);
    const found = await waitForDeliveries(t.ctx, 2500, wh);
    expect(new Set(found.map((d) => d.eventId)).size).to.equal(2500);
    // 2500 deliveries (all parked: the URL is refused) through 100 in memory: at least 25 writes, not one that held them all.
    expect(engine.stats.stream!.batches).to.be.at.least(25);
  });

  it('lets a standby take over the slot when the leader stops', async () => {
    const standby = startTailer(t.ctx, t.database.url);
    try {
      await sleep(300);
      expect(tailer.status().role).to.equal('leader');
      expect(standby.status().role).to.equal('standby');
      const wh = await sub();
      await tailer.stop();
      await writer.query(`INSERT INTO shop_master.orders VALUES (1, 'after failover', 1, '')`);
      await waitForDeliveries(t.ctx, 1, wh);
      expect(standby.status().role).to.equal('leader');
    } finally {
      tailer = standby;
    }
  });

  it('acknowledges only what it wrote, and lets an idle slot advance', async () => {
    const wh = await sub();
    await writer.query(`INSERT INTO shop_master.orders VALUES (1, 'x', 1, '')`);
    await waitForDeliveries(t.ctx, 1, wh);
    await waitUntilCaughtUp(t.ctx, tailer);
    const slot = tailer.status().slotName;
    const position = async () =>
      (await t.ctx.pool.query(`SELECT confirmed_flush_lsn::text AS c FROM pg_replication_slots WHERE slot_name = $1`, [slot])).rows[0]
        .c as string;
    const before = await position();
    // WAL written by tables nobody watches must not be held back by the slot.
    await writer.query('CREATE TABLE public.unwatched (x int)');
    await writer.query('INSERT INTO public.unwatched SELECT generate_series(1, 10000)');
    const { rows } = await t.ctx.pool.query(`SELECT pg_current_wal_insert_lsn()::text AS l`);
    const until = Date.now() + 10_000;
    let after = before;
    while (Date.now() < until) {
      after = await position();
      const { rows: cmp } = await t.ctx.pool.query('SELECT $1::pg_lsn >= $2::pg_lsn AS ok', [after, rows[0].l]);
      if (cmp[0].ok) break;
      await sleep(50);
    }
    const { rows: cmp } = await t.ctx.pool.query('SELECT $1::pg_lsn >= $2::pg_lsn AS ok', [after, rows[0].l]);
    expect(cmp[0].ok, `slot at ${after}, WAL at ${rows[0].l}`).to.equal(true);
  });
});
