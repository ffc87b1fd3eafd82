import { setTimeout as sleep } from 'node:timers/promises';
import { expect } from 'chai';
import pg from 'pg';
import { startTailerOps } from '../../src/ops/tailer-ops.js';
import { closeServer } from '../../src/http/server.js';
import type { WalTailer } from '../../src/tailer/tailer.js';
import { managementClient, startTestApi, type TestApi } from '../support/api.js';
import { HttpClient } from '../support/http.js';
import { insertSubscription } from '../support/subscriptions.js';
import { deliveries, loseSlot, startTailer, waitForDeliveries, waitForLeader, waitUntilCaughtUp } from './support.js';

// What production databases do every week — migrations — must neither break the application's
// writes nor lose or corrupt changes silently.
describe('tailer: capture follows schema changes', function () {
  this.timeout(120_000);
  let t: TestApi;
  let writer: pg.Client;
  let tailer: WalTailer;
  let api: HttpClient;

  before(async () => {
    t = await startTestApi({ env: { WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' } });
    await t.provision({ projectId: 'shop', name: 'master' });
    writer = new pg.Client({ connectionString: t.database.url });
    await writer.connect();
    api = await managementClient(t, 'shop');
    tailer = startTailer(t.ctx, t.database.url);
    await waitForLeader(tailer);
  });
  after(async () => {
    await tailer?.stop();
    await writer?.end();
    await t?.close();
  });

  const sub = (table: string, extra: Partial<Parameters<typeof insertSubscription>[1]> = {}) =>
    insertSubscription(t.ctx, { projectId: 'shop', environment: 'master', schema: 'shop_master', table, ...extra });
  const payloads = async (wh: string, n: number, timeoutMs = 20_000) =>
    (await waitForDeliveries(t.ctx, n, wh, timeoutMs)).map((d) => d.payload);

  it('stored generated columns: the application still updates and deletes, and payloads carry the values', async () => {
    await writer.query(`CREATE TABLE shop_master.g_stored (id int PRIMARY KEY, a int, b int GENERATED ALWAYS AS (a * 2) STORED)`);
    await writer.query(`CREATE TABLE shop_master.g_nokey (a int, b int GENERATED ALWAYS AS (a * 3) STORED)`);
    const wh = await sub('g_stored');
    const nokey = await sub('g_nokey');
    await writer.query(`INSERT INTO shop_master.g_stored (id, a) VALUES (1, 1)`);
    await writer.query(`UPDATE shop_master.g_stored SET a = 5 WHERE id = 1`);
    await writer.query(`DELETE FROM shop_master.g_stored WHERE id = 1`);
    await writer.query(`INSERT INTO shop_master.g_nokey (a) VALUES (1)`);
    await writer.query(`UPDATE shop_master.g_nokey SET a = 2`);
    await writer.query(`DELETE FROM shop_master.g_nokey`);
    const [ins, upd, del] = await payloads(wh, 3);
    expect(ins.record).to.deep.equal({ id: 1, a: 1, b: 2 });
    expect(upd.record).to.deep.equal({ id: 1, a: 5, b: 10 });
    expect(upd.old_record).to.deep.equal({ id: 1, a: 1, b: 2 });
    expect(upd.changed_fields).to.deep.equal(['a', 'b']);
    expect(del.record).to.deep.equal({ id: 1, a: 5, b: 10 });
    const noKey = await payloads(nokey, 3);
    expect(noKey.map((p) => p.event)).to.deep.equal(['INSERT', 'UPDATE', 'DELETE']);
    expect(noKey[1].old_record).to.deep.equal({ a: 1, b: 3 });
  });

  it('virtual generated columns: refused with the reason, and the table is left as it was', async () => {
    await writer.query(`CREATE TABLE shop_master.g_virtual (id int PRIMARY KEY, a int, b int GENERATED ALWAYS AS (a * 2) VIRTUAL)`);
    const res = await api.post('/api/rest/_webhooks', {
      projectId: 'shop',
      environment: 'master',
      table: 'g_virtual',
      events: ['INSERT'],
      url: 'https://127.0.0.1:1/hook',
      secret: 'whsec-super-secret-value-0001',
    });
    expect(res.status, JSON.stringify(res.body)).to.equal(400);
    expect(res.body.error).to.equal('VALIDATION_ERROR');
    expect(res.body.violations[0].path).to.equal('table');
    expect(res.body.violations[0].message).to.match(/virtual generated columns \(b\).*STORED/);
    await writer.query(`INSERT INTO shop_master.g_virtual (id, a) VALUES (1, 1)`);
    await writer.query(`UPDATE shop_master.g_virtual SET a = 2`);
    await writer.query(`DELETE FROM shop_master.g_virtual`);
  });

  it('a virtual generated column added to a watched table: the application still updates and deletes, and it is reported', async () => {
    await writer.query(`CREATE TABLE shop_master.g_later (id int PRIMARY KEY, a int)`);
    await writer.query(`CREATE TABLE shop_master.g_later_nokey (a int)`);
    const keyed = await sub('g_later');
    const unkeyed = await sub('g_later_nokey');
    await writer.query(`INSERT INTO shop_master.g_later (id, a) VALUES (1, 1)`);
    await writer.query(`INSERT INTO shop_master.g_later_nokey (a) VALUES (1)`);
    // Virtual by default on Postgres 18: with REPLICA IDENTITY FULL these UPDATEs and DELETEs would fail.
    await writer.query(`ALTER TABLE shop_master.g_later ADD COLUMN b int GENERATED ALWAYS AS (a * 2)`);
    await writer.query(`ALTER TABLE shop_master.g_later_nokey ADD COLUMN b int GENERATED ALWAYS AS (a * 2)`);
    await writer.query(`UPDATE shop_master.g_later SET a = 2`);
    await writer.query(`DELETE FROM shop_master.g_later`);
    await writer.query(`UPDATE shop_master.g_later_nokey SET a = 2`);
    await writer.query(`DELETE FROM shop_master.g_later_nokey`);
    const codes = async (id: string) =>
      ((await api.get(`/api/rest/_webhooks/${id}`)).body.webhook.problems as Array<{ code: string }>).map((p) => p.code);
    expect(await codes(keyed)).to.deep.equal(['REPLICA_IDENTITY_CHANGED']);
    expect(await codes(unkeyed)).to.include('TABLE_MISSING');
  });

  it('a table dropped and created again under load: every committed insert of the new table is delivered', async () => {
    await writer.query(`CREATE TABLE shop_master.swapped (id serial PRIMARY KEY, v text)`);
    const wh = await sub('swapped', { events: ['INSERT'] });
    const load = new pg.Client({ connectionString: t.database.url });
    await load.connect();
    let stop = false;
    const committed: string[] = [];
    const writing = (async () => {
      for (let i = 0; !stop; i++) {
        try {
          await load.query(`INSERT INTO shop_master.swapped (v) VALUES ($1)`, [`v${i}`]);
          committed.push(`v${i}`);
        } catch {
          await sleep(1); // the table is being swapped
        }
      }
    })();
    await sleep(200);
    await writer.query(`DROP TABLE shop_master.swapped`);
    await sleep(50);
    await writer.query(`CREATE TABLE shop_master.swapped (id serial PRIMARY KEY, v text, added int)`);
    await sleep(300);
    stop = true;
    await writing;
    await load.end();
    const after = committed.length;
    expect(after).to.be.greaterThan(10);
    const found = await payloads(wh, committed.length, 30_000);
    expect(found.map((p) => p.record.v).sort()).to.deep.equal([...committed].sort());
    expect(
      found.some((p) => 'added' in p.record),
      'changes of the new table are delivered',
    ).to.equal(true);
    const view = await api.get(`/api/rest/_webhooks/${wh}`);
    expect(view.body.webhook.problems).to.deep.equal([]);
  });

  it('partitioned tables: published through the root, a partition created later included, application writes succeed', async () => {
    await writer.query(`CREATE TABLE shop_master.measures (id int, k int, v text) PARTITION BY RANGE (id)`);
    await writer.query(`CREATE TABLE shop_master.measures_1 PARTITION OF shop_master.measures FOR VALUES FROM (0) TO (10)`);
    const wh = await sub('measures');
    await writer.query(`CREATE TABLE shop_master.measures_2 PARTITION OF shop_master.measures FOR VALUES FROM (10) TO (20)`);
    await writer.query(`INSERT INTO shop_master.measures VALUES (1, 1, 'a'), (11, 2, 'b')`);
    // No primary key: UPDATE and DELETE need the partitions' replica identity (FULL).
    await writer.query(`UPDATE shop_master.measures SET v = 'c' WHERE id = 11`);
    await writer.query(`DELETE FROM shop_master.measures WHERE id = 11`);
    const found = await payloads(wh, 4);
    expect(found.map((p) => [p.event, p.table])).to.deep.equal([
      ['INSERT', 'measures'],
      ['INSERT', 'measures'],
      ['UPDATE', 'measures'],
      ['DELETE', 'measures'],
    ]);
    expect(found[2].old_record).to.deep.equal({ id: 11, k: 2, v: 'b' });
    expect(found[3].record).to.deep.equal({ id: 11, k: 2, v: 'c' });
  });

  it('TRUNCATE: one delivery per truncated table for subscriptions that opted in, and counted', async () => {
    await writer.query(`CREATE TABLE shop_master.t1 (id int PRIMARY KEY); CREATE TABLE shop_master.t2 (id int PRIMARY KEY)`);
    const optIn1 = await sub('t1', { events: ['INSERT', 'TRUNCATE'] });
    const optIn2 = await sub('t2', { events: ['TRUNCATE'], filter: { id: 1 } });
    const without = await sub('t1', { events: ['INSERT', 'DELETE'] });
    await writer.query(`INSERT INTO shop_master.t1 SELECT generate_series(1, 15); INSERT INTO shop_master.t2 VALUES (1)`);
    await writer.query(`TRUNCATE shop_master.t1, shop_master.t2`);
    await writer.query(`TRUNCATE shop_master.t1`);
    await waitUntilCaughtUp(t.ctx, tailer);
    const one = await payloads(optIn1, 17);
    const truncates = one.filter((p) => p.event === 'TRUNCATE');
    expect(truncates).to.have.length(2);
    for (const p of truncates) {
      expect(p).to.include({ table: 't1', event: 'TRUNCATE' });
      expect(p.record).to.deep.equal({});
      expect(p.old_record).to.equal(null);
    }
    const two = await payloads(optIn2, 1);
    expect(two.map((p) => [p.event, p.table])).to.deep.equal([['TRUNCATE', 't2']]);
    expect((await deliveries(t.ctx, without)).map((d) => d.eventType)).to.deep.equal(new Array(15).fill('INSERT'));
    expect(await t.ctx.metrics.text()).to.match(/walgate_truncates_total \d+/);
    const subscribed = await api.post('/api/rest/_webhooks', {
      projectId: 'shop',
      environment: 'master',
      table: 't1',
      events: ['TRUNCATE'],
      url: 'https://127.0.0.1:1/hook',
      secret: 'whsec-super-secret-value-0001',
    });
    expect(subscribed.status, JSON.stringify(subscribed.body)).to.equal(201);
    expect(subscribed.body.webhook.events).to.deep.equal(['TRUNCATE']);
  });

  it('filter and select on a dropped column, a dropped table: problems, with the time first seen; healthy again when fixed', async () => {
    await writer.query(`CREATE TABLE shop_master.drift (id int PRIMARY KEY, status text, note text)`);
    const wh = await sub('drift', { filter: { status: 'paid' }, select: ['id', 'note'] });
    const problems = async () => {
      const res = await api.get(`/api/rest/_webhooks/${wh}`);
      expect(res.status).to.equal(200);
      return res.body.webhook.problems as Array<{ code: string; message: string; since: string }>;
    };
    expect(await problems()).to.deep.equal([]);
    await writer.query(`ALTER TABLE shop_master.drift DROP COLUMN status, DROP COLUMN note`);
    const seen = await problems();
    expect(seen.map((p) => p.code)).to.deep.equal(['FILTER_COLUMN_MISSING', 'SELECT_COLUMN_MISSING']);
    expect(seen[0]!.message).to.contain('status');
    expect(seen[1]!.message).to.contain('note');
    const again = await problems();
    expect(again.map((p) => p.since)).to.deep.equal(seen.map((p) => p.since));
    const listed = await api.get('/api/rest/_webhooks?limit=100');
    expect(listed.body.webhooks.find((w: { id: string }) => w.id === wh).problems).to.have.length(2);
    await writer.query(`DROP TABLE shop_master.drift`);
    expect((await problems()).map((p) => p.code)).to.deep.equal(['TABLE_MISSING']);
    const metrics = (await new HttpClient(t.url).get('/metrics')).text;
    expect(metrics).to.match(/walgate_webhook_problems\{code="TABLE_MISSING"\} [1-9]/);
    await writer.query(`CREATE TABLE shop_master.drift (id int PRIMARY KEY, status text, note text)`);
    expect(await problems()).to.deep.equal([]);
  });

  it('a watched table switched away from REPLICA IDENTITY FULL is set back at once', async () => {
    await writer.query(`CREATE TABLE shop_master.ident (a int, b text)`);
    const wh = await sub('ident');
    await writer.query(`ALTER TABLE shop_master.ident REPLICA IDENTITY DEFAULT`);
    const { rows } = await writer.query(`SELECT relreplident FROM pg_class WHERE oid = 'shop_master.ident'::regclass`);
    expect(rows[0].relreplident).to.equal('f');
    await writer.query(`INSERT INTO shop_master.ident VALUES (1, 'x')`);
    await writer.query(`UPDATE shop_master.ident SET b = 'y'`); // without FULL (and no key) this fails
    const [, upd] = await payloads(wh, 2);
    expect(upd.old_record).to.deep.equal({ a: 1, b: 'x' });
    expect(upd.changed_fields).to.deep.equal(['b']);
    expect((await api.get(`/api/rest/_webhooks/${wh}`)).body.webhook.problems).to.deep.equal([]);
  });

  it('composite types renamed, extended and shrunk: payloads follow without a restart', async () => {
    await writer.query(`CREATE TYPE shop_master.address AS (street text, zip int)`);
    await writer.query(`CREATE TABLE shop_master.customers (id int PRIMARY KEY, addr shop_master.address, tags shop_master.address[])`);
    const wh = await sub('customers', { events: ['INSERT'] });
    await writer.query(`INSERT INTO shop_master.customers VALUES (1, ROW('Main', 444), ARRAY[ROW('a', 1)::shop_master.address])`);
    await payloads(wh, 1);
    await writer.query(`ALTER TYPE shop_master.address RENAME ATTRIBUTE street TO road`);
    await writer.query(`INSERT INTO shop_master.customers VALUES (2, ROW('Side', 555), NULL)`);
    await payloads(wh, 2);
    await writer.query(`ALTER TYPE shop_master.address ADD ATTRIBUTE country text`);
    await writer.query(`INSERT INTO shop_master.customers VALUES (3, ROW('High', 666, 'DE'), NULL)`);
    await payloads(wh, 3);
    await writer.query(`ALTER TYPE shop_master.address DROP ATTRIBUTE zip`);
    await writer.query(`INSERT INTO shop_master.customers VALUES (4, ROW('Low', 'FR'), NULL)`);
    const found = await payloads(wh, 4);
    const expected = await writer.query(`SELECT to_jsonb(c) AS row FROM shop_master.customers c WHERE id = 4`);
    expect(found.map((p) => p.record.addr)).to.deep.equal([
      { street: 'Main', zip: 444 },
      { road: 'Side', zip: 555 },
      { road: 'High', zip: 666, country: 'DE' },
      { road: 'Low', country: 'FR' },
    ]);
    expect(found[0].record.tags).to.deep.equal([{ street: 'a', zip: 1 }]);
    expect(found[3].record).to.deep.equal(expected.rows[0].row);
  });

  it('without the event trigger (walgate not a superuser): REPLICA_IDENTITY_CHANGED and TABLE_MISSING are reported, an update repairs them', async () => {
    await writer.query(`CREATE TABLE shop_master.manual (id int PRIMARY KEY, v text)`);
    const created = await api.post('/api/rest/_webhooks', {
      projectId: 'shop',
      environment: 'master',
      table: 'manual',
      events: ['INSERT', 'UPDATE'],
      url: 'https://127.0.0.1:1/hook',
      secret: 'whsec-super-secret-value-0001',
    });
    expect(created.status, JSON.stringify(created.body)).to.equal(201);
    const wh = created.body.webhook.id as string;
    const codes = async () =>
      ((await api.get(`/api/rest/_webhooks/${wh}`)).body.webhook.problems as Array<{ code: string }>).map((p) => p.code);
    await writer.query('ALTER EVENT TRIGGER walgate_follow_watched_tables DISABLE');
    try {
      await writer.query(`ALTER TABLE shop_master.manual REPLICA IDENTITY DEFAULT`);
      expect(await codes()).to.deep.equal(['REPLICA_IDENTITY_CHANGED']);
      expect((await api.patch(`/api/rest/_webhooks/${wh}`, { active: true })).status).to.equal(200);
      expect(await codes()).to.deep.equal([]);
      await writer.query(`DROP TABLE shop_master.manual; CREATE TABLE shop_master.manual (id int PRIMARY KEY, v text)`);
      expect(await codes()).to.deep.equal(['REPLICA_IDENTITY_CHANGED', 'TABLE_MISSING']); // not captured
      expect((await api.patch(`/api/rest/_webhooks/${wh}`, { active: true })).status).to.equal(200);
      expect(await codes()).to.deep.equal([]);
    } finally {
      await writer.query('ALTER EVENT TRIGGER walgate_follow_watched_tables ENABLE');
    }
    await writer.query(`INSERT INTO shop_master.manual VALUES (1, 'after the repair')`);
    const [p] = await payloads(wh, 1);
    expect(p.record).to.deep.equal({ id: 1, v: 'after the repair' });
  });

  it('slot invalidation: a gap is recorded, /readyz of both daemons is degraded and the gauge fires until acknowledged', async () => {
    await writer.query(`CREATE TABLE shop_master.lost (id int PRIMARY KEY, pad text)`);
    const wh = await sub('lost', { events: ['INSERT'] });
    await writer.query(`INSERT INTO shop_master.lost VALUES (0, 'before')`);
    await payloads(wh, 1);
    await waitUntilCaughtUp(t.ctx, tailer);
    await tailer.stop();
    const slotName = tailer.status().slotName;
    await loseSlot(slotName, async (round) => {
      await writer.query(`INSERT INTO shop_master.lost SELECT g, repeat('x', 2000) FROM generate_series($1::int, $1::int + 999) g`, [
        1 + round * 1000,
      ]);
    });
    tailer = startTailer(t.ctx, t.database.url);
    await waitForLeader(tailer, 30_000);
    const ops = await startTailerOps(t.ctx, tailer, 0, '127.0.0.1');
    try {
      const gaps = await api.get('/api/rest/_gaps');
      expect(gaps.status, JSON.stringify(gaps.body)).to.equal(200);
      expect(gaps.body.gaps).to.have.length(1);
      const gap = gaps.body.gaps[0];
      expect(gap).to.include({ reason: 'slot_lost', slotName, acknowledgedAt: null });
      expect(gap.webhookIds).to.include(wh);
      expect(gap.fromLsn).to.match(/^[0-9A-F]+\/[0-9A-F]+$/);
      expect(gap.toLsn).to.match(/^[0-9A-F]+\/[0-9A-F]+$/);
      expect(gap.fromTime).to.be.a('string');
      for (const url of [t.url, ops.url]) {
        const ready = await new HttpClient(url).get('/readyz');
        expect(ready.status, url).to.equal(200);
        expect(ready.body.status, url).to.equal('degraded');
        expect(ready.body.checks).to.deep.include({ name: 'capture_gaps', state: 'degraded', ok: true, detail: { open: 1 } });
      }
      expect((await new HttpClient(t.url).get('/metrics')).text).to.match(/walgate_capture_gaps_open 1/);
      // Another project sees nothing of it and cannot acknowledge it.
      await t.provision({ projectId: 'other', name: 'master' });
      const other = await managementClient(t, 'other');
      expect((await other.get('/api/rest/_gaps')).body.gaps).to.deep.equal([]);
      expect((await other.post(`/api/rest/_gaps/${gap.id}/acknowledge`)).status).to.equal(404);
      const ack = await api.post(`/api/rest/_gaps/${gap.id}/acknowledge`);
      expect(ack.status, JSON.stringify(ack.body)).to.equal(200);
      expect(ack.body.gap.acknowledgedAt).to.be.a('string');
      expect((await api.get('/api/rest/_gaps?open=true')).body.gaps).to.deep.equal([]);
      for (const url of [t.url, ops.url]) expect((await new HttpClient(url).get('/readyz')).body.status, url).to.equal('ready');
      expect((await new HttpClient(t.url).get('/metrics')).text).to.match(/walgate_capture_gaps_open 0/);
      // Capture goes on after the gap.
      await writer.query(`INSERT INTO shop_master.lost VALUES (-1, 'after')`);
      const after = await waitForDeliveries(t.ctx, 2, wh);
      expect(after.some((d) => d.payload.record.pad === 'after')).to.equal(true);
    } finally {
      await closeServer(ops.server);
    }
  });
});
