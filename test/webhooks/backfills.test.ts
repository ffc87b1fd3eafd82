import { setTimeout as sleep } from 'node:timers/promises';
import { expect } from 'chai';
import pg from 'pg';
import { systemClock } from '../../src/core/clock.js';
import { describeBackfillTable, lastSortKey, readPage } from '../../src/tailer/backfill/page.js';
import { managementClient, startTestApi, type TestApi } from '../support/api.js';
import { ContractClient } from '../support/openapi.js';
import { verifies, type ReceivedRequest, type TestReceiver } from '../support/receiver.js';
import { startBackfillPipeline, type BackfillPipeline } from '../tailer/backfill-support.js';

// Backfills through the management API (docs/backfills.md), every answer checked against the
// OpenAPI document, on the real path: the tailer reads pages between its WAL watermarks, the
// worker POSTs the READ events over HTTPS to a receiver.

const SECRET = 'whsec_' + Buffer.alloc(32, 9).toString('base64');

describe('backfills: REST, READ events, progress, cancel, errors', function () {
  this.timeout(120_000);
  let t: TestApi;
  let writer: pg.Client;
  let receiver: TestReceiver;
  let pipeline: BackfillPipeline;
  let api: ContractClient;

  before(async () => {
    t = await startTestApi({
      env: { WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true', WEBHOOK_RETRY_DELAYS_MS: '0,40,80,120,160' },
      // Progress is polled: the management API's rate limit is not what this file tests.
      overrides: { clock: systemClock, rateLimits: { management: { name: 'management', points: 100_000, durationSeconds: 60 } } },
    });
    await t.provision({ projectId: 'shop', name: 'master' });
    pipeline = await startBackfillPipeline(t, { pageRows: 40, pageBytes: 1024 * 1024, concurrency: 2 });
    ({ writer, receiver } = pipeline);
    await writer.query('CREATE TABLE shop_master.items (id int PRIMARY KEY, status text NOT NULL, n int NOT NULL, price numeric(12,2))');
    await writer.query(
      `INSERT INTO shop_master.items SELECT g, CASE WHEN g % 3 = 0 THEN 'paid' ELSE 'open' END, (g * 7) % 200, g / 4.0 FROM generate_series(1, 250) g`,
    );
    await writer.query('CREATE TABLE shop_master.nokey (a int)');
    await pipeline.startTailer();
    const doc = (await t.http.get('/openapi.json')).body;
    api = new ContractClient(doc, await managementClient(t, 'shop'));
  });
  after(async () => {
    await pipeline?.close();
    await t?.close();
  });

  async function subscribe(path: string, extra: Record<string, unknown> = {}): Promise<string> {
    const res = await api.call('createWebhook', {
      body: {
        projectId: 'shop',
        environment: 'master',
        table: 'items',
        events: ['INSERT', 'UPDATE', 'DELETE'],
        url: `${receiver.url}${path}`,
        secret: SECRET,
        ...extra,
      },
    });
    expect(res.status, JSON.stringify(res.body)).to.equal(201);
    return res.body.webhook.id;
  }

  async function finished(webhookId: string, backfillId: string, timeoutMs = 60_000): Promise<Record<string, any>> {
    const until = Date.now() + timeoutMs;
    for (;;) {
      const res = await api.call('getBackfill', { params: { id: webhookId, backfillId } });
      expect(res.status, JSON.stringify(res.body)).to.equal(200);
      if (res.body.backfill.state !== 'running') return res.body.backfill;
      if (Date.now() > until) {
        const why = t.logs.lines.filter((l) => /backfill/.test(l)).slice(-5);
        throw new Error(`backfill still running: ${JSON.stringify(res.body.backfill)}\n${why.join('\n')}`);
      }
      await sleep(100);
    }
  }

  /** READ requests that reached `path`, once each (the receiver dedupes by webhook-id, as at-least-once asks). */
  async function reads(path: string, count: number, timeoutMs = 30_000): Promise<ReceivedRequest[]> {
    const until = Date.now() + timeoutMs;
    for (;;) {
      const seen = new Map<string, ReceivedRequest>();
      for (const r of receiver.requests)
        if (r.path === path && r.headers['x-service-event'] === 'READ') seen.set(r.headers['webhook-id']!, r);
      if (seen.size >= count) return [...seen.values()];
      if (Date.now() > until) throw new Error(`expected ${count} READ deliveries on ${path}, got ${seen.size}`);
      await sleep(50);
    }
  }

  it('delivers every row as a READ event to the subscription that asked, and to no other; progress says so', async () => {
    const asked = await subscribe('/asked');
    await subscribe('/other');
    const started = await api.call('createBackfill', { params: { id: asked } });
    expect(started.status, JSON.stringify(started.body)).to.equal(202);
    expect(started.body.backfill).to.include({ webhookId: asked, state: 'running', rows: 0, pages: 0, totalEstimate: 250, gapId: null });
    expect(started.body.backfill.id).to.match(/^bf_[0-9a-f]{32}$/);
    const done = await finished(asked, started.body.backfill.id);
    expect(done).to.include({ state: 'done', rows: 250, error: null });
    expect(done.pages).to.be.at.least(7); // 40 rows a page
    expect(done.finishedAt).to.be.a('string');

    const got = await reads('/asked', 250);
    const table = (await writer.query('SELECT to_jsonb(i) AS row FROM shop_master.items i ORDER BY id')).rows.map((r) => r.row);
    const bodies = got.map((r) => JSON.parse(r.body)).sort((a, b) => a.record.id - b.record.id);
    expect(bodies.map((b) => b.record)).to.deep.equal(table);
    for (const b of bodies) {
      expect(b).to.include({ event: 'READ', table: 'items', project_id: 'shop', environment: 'master', old_record: null });
      expect(b.data).to.deep.equal(b.record);
      expect(b.changed_fields).to.deep.equal([]);
    }
    expect(
      got.every((r) => verifies(SECRET, r)),
      'signed like any delivery',
    ).to.equal(true);
    expect(new Set(got.map((r) => r.headers['webhook-id'])).size).to.equal(250);
    expect(
      receiver.requests.filter((r) => r.path === '/other'),
      'no other subscription sees a backfill',
    ).to.deep.equal([]);

    const list = await api.call('listBackfills', { params: { id: asked } });
    expect(list.status).to.equal(200);
    expect(list.body.backfills.map((b: { id: string }) => b.id)).to.deep.equal([started.body.backfill.id]);
    // Counted: this process runs the tailer too, so the api's /metrics shows its counters.
    const metrics = (await t.http.get('/metrics')).text;
    expect(Number(/^walgate_backfill_rows_total (\d+)/m.exec(metrics)?.[1])).to.be.at.least(250);
    expect(Number(/^walgate_backfill_pages_total\{outcome="handed"\} (\d+)/m.exec(metrics)?.[1])).to.be.at.least(7);
    expect(metrics).to.match(/^walgate_events_total\{operation="READ"\} \d+/m);
    // The delivery log shows them as READ.
    const log = await api.call('listDeliveries', { params: { id: asked }, query: { limit: '5' } });
    expect(log.body.deliveries[0].event).to.equal('READ');
  });

  it('`filter`, `sortColumn` and `since` choose the rows; the subscription’s own filter and select apply too', async () => {
    const wh = await subscribe('/chosen', { filter: { status: 'paid' }, select: ['id', 'n'] });
    const started = await api.call('createBackfill', { params: { id: wh }, body: { sortColumn: 'n', since: '50', filter: { n: 63 } } });
    expect(started.status, JSON.stringify(started.body)).to.equal(202);
    expect(started.body.backfill).to.include({ sortColumn: 'n', since: '50' });
    expect(started.body.backfill.filter).to.deep.equal({ n: 63 });
    const expected = (await writer.query(`SELECT id, n FROM shop_master.items WHERE status = 'paid' AND n >= 50 AND n = 63 ORDER BY id`))
      .rows;
    expect(expected.length).to.be.greaterThan(0);
    const done = await finished(wh, started.body.backfill.id);
    expect(done.state).to.equal('done');
    const got = (await reads('/chosen', expected.length)).map((r) => JSON.parse(r.body).record).sort((a, b) => a.id - b.id);
    expect(got).to.deep.equal(expected);
    expect(done.rows).to.equal(expected.length);

    // Without a filter of its own, ordered by n from 190 on.
    const second = await api.call('createBackfill', { params: { id: wh }, body: { sortColumn: 'n', since: '190' } });
    await finished(wh, second.body.backfill.id);
    const paidFrom190 = (await writer.query(`SELECT count(*)::int AS c FROM shop_master.items WHERE status = 'paid' AND n >= 190`)).rows[0]
      .c;
    expect((await api.call('getBackfill', { params: { id: wh, backfillId: second.body.backfill.id } })).body.backfill.rows).to.equal(
      paidFrom190,
    );
  });

  it('one backfill per subscription at a time (409 BACKFILL_RUNNING); cancel stops it', async () => {
    const wh = await subscribe('/paused', { active: false });
    const first = await api.call('createBackfill', { params: { id: wh }, body: {} });
    expect(first.status).to.equal(202);
    const again = await api.call('createBackfill', { params: { id: wh } });
    expect(again.status).to.equal(409);
    expect(again.body.error).to.equal('BACKFILL_RUNNING');
    // A paused subscription's backfill waits: nothing read, nothing delivered.
    await sleep(400);
    const waiting = (await api.call('getBackfill', { params: { id: wh, backfillId: first.body.backfill.id } })).body.backfill;
    expect(waiting).to.include({ state: 'running', rows: 0, pages: 0 });
    const cancelled = await api.call('cancelBackfill', { params: { id: wh, backfillId: first.body.backfill.id } });
    expect(cancelled.status).to.equal(200);
    expect(cancelled.body.backfill.state).to.equal('cancelled');
    expect(cancelled.body.backfill.finishedAt).to.be.a('string');
    // Cancelling a finished one answers it as it is.
    const twice = await api.call('cancelBackfill', { params: { id: wh, backfillId: first.body.backfill.id } });
    expect(twice.body.backfill).to.deep.equal(cancelled.body.backfill);
    // Resumed: no page of the cancelled backfill is read.
    await api.call('updateWebhook', { params: { id: wh }, body: { active: true } });
    await sleep(500);
    expect(receiver.requests.filter((r) => r.path === '/paused')).to.deep.equal([]);
    // A new one may start now.
    const next = await api.call('createBackfill', { params: { id: wh } });
    expect(next.status).to.equal(202);
    expect((await finished(wh, next.body.backfill.id)).rows).to.equal(250);
  });

  it('errors: unknown subscription or backfill 404, bad body 400 naming the field, a table without a key 400', async () => {
    const wh = await subscribe('/errors', { active: false });
    const unknownHook = await api.call('createBackfill', { params: { id: 'wh_nope' } });
    expect([unknownHook.status, unknownHook.body.error]).to.deep.equal([404, 'WEBHOOK_NOT_FOUND']);
    for (const op of ['listBackfills', 'getBackfill', 'cancelBackfill']) {
      const res = await api.call(op, { params: { id: 'wh_nope', backfillId: 'bf_nope' } });
      expect([res.status, res.body.error], op).to.deep.equal([404, 'WEBHOOK_NOT_FOUND']);
    }
    for (const op of ['getBackfill', 'cancelBackfill']) {
      const res = await api.call(op, { params: { id: wh, backfillId: 'bf_nope' } });
      expect([res.status, res.body.error], op).to.deep.equal([404, 'BACKFILL_NOT_FOUND']);
    }
    const bad = async (body: Record<string, unknown>, path: string) => {
      const res = await api.call('createBackfill', { params: { id: wh }, body });
      expect([res.status, res.body.error], JSON.stringify(body)).to.deep.equal([400, 'VALIDATION_ERROR']);
      expect(
        res.body.violations.map((v: { path: string }) => v.path),
        JSON.stringify(res.body),
      ).to.include(path);
    };
    await bad({ sortColumn: 'nope' }, 'sortColumn');
    await bad({ since: 'not a number' }, 'since');
    await bad({ sortColumn: 'n', since: '99999999999999999999' }, 'since');
    await bad({ filter: { nope: 1 } }, 'filter.nope');
    await bad({ filter: { n: { $gt: 1 } } }, 'filter.n');
    await bad({ sortcolumn: 'n' }, '(body)');
    const noKey = await api.call('createWebhook', {
      body: { projectId: 'shop', environment: 'master', table: 'nokey', events: ['INSERT'], url: `${receiver.url}/nokey`, secret: SECRET },
    });
    expect(noKey.status).to.equal(201);
    const refused = await api.call('createBackfill', { params: { id: noKey.body.webhook.id } });
    expect([refused.status, refused.body.error]).to.deep.equal([400, 'VALIDATION_ERROR']);
    expect(refused.body.violations[0].message).to.match(/no primary key/);
    // A sort column without an order (a point) is refused up front rather than failing page after page.
    await writer.query('CREATE TABLE shop_master.shapes (id int PRIMARY KEY, at point)');
    const shapes = await api.call('createWebhook', {
      body: {
        projectId: 'shop',
        environment: 'master',
        table: 'shapes',
        events: ['INSERT'],
        url: `${receiver.url}/shapes`,
        secret: SECRET,
      },
    });
    const unordered = await api.call('createBackfill', { params: { id: shapes.body.webhook.id }, body: { sortColumn: 'at' } });
    expect([unordered.status, unordered.body.violations?.[0]?.path]).to.deep.equal([400, 'sortColumn']);
    // Nothing was started by any of these.
    expect((await api.call('listBackfills', { params: { id: wh } })).body.backfills).to.deep.equal([]);
  });

  it('without row ordering too: a receiver that applies events by event id ends with the table, under inserts, updates and deletes', async () => {
    await writer.query('CREATE TABLE shop_master.busy (id int PRIMARY KEY, v int NOT NULL)');
    await writer.query('INSERT INTO shop_master.busy SELECT g, 0 FROM generate_series(1, 3000) g');
    const res = await api.call('createWebhook', {
      body: {
        projectId: 'shop',
        environment: 'master',
        table: 'busy',
        events: ['INSERT', 'UPDATE', 'DELETE'],
        url: `${receiver.url}/busy`,
        secret: SECRET,
      },
    });
    const wh = res.body.webhook.id as string;
    let writing = true;
    let state = 3;
    const rnd = (n: number) => ((state = (Math.imul(state, 1103515245) + 12345) >>> 0) % n) + 1;
    const writes = (async () => {
      let next = 3001;
      while (writing) {
        await writer.query('UPDATE shop_master.busy SET v = v + 1 WHERE id = ANY ($1)', [[rnd(3000), rnd(3000), rnd(3000)]]);
        await writer.query('DELETE FROM shop_master.busy WHERE id = $1', [rnd(3000)]);
        await writer.query('INSERT INTO shop_master.busy VALUES ($1, 0), ($2, 0) ON CONFLICT (id) DO UPDATE SET v = busy.v + 1', [
          next++,
          rnd(3000),
        ]);
        await sleep(2);
      }
    })();
    const started = await api.call('createBackfill', { params: { id: wh } });
    await finished(wh, started.body.backfill.id);
    writing = false;
    await writes;
    // The receiver's mirror: every distinct event applied in event id (commit) order.
    const mirror = () => {
      const events = new Map<string, { event: string; record: { id: number; v: number } }>();
      for (const r of receiver.requests) if (r.path === '/busy') events.set(r.headers['webhook-id']!, JSON.parse(r.body));
      const rows = new Map<number, number>();
      for (const id of [...events.keys()].sort()) {
        const e = events.get(id)!;
        if (e.event === 'DELETE') rows.delete(e.record.id);
        else rows.set(e.record.id, e.record.v);
      }
      return rows;
    };
    const table = new Map(
      (await writer.query<{ id: number; v: number }>('SELECT id, v FROM shop_master.busy')).rows.map((r) => [r.id, r.v]),
    );
    const differs = () => {
      const m = mirror();
      return m.size !== table.size || [...table].some(([id, v]) => m.get(id) !== v);
    };
    const until = Date.now() + 30_000;
    while (differs() && Date.now() < until) await sleep(100);
    const m = mirror();
    expect([...m].sort((a, b) => a[0] - b[0])).to.deep.equal([...table].sort((a, b) => a[0] - b[0]));
  });

  it('a page stops at BACKFILL_PAGE_BYTES (one row at least), the next starts after it, the last row of the start is the end', async () => {
    await writer.query('CREATE TABLE shop_master.wide (id int PRIMARY KEY, body text NOT NULL)');
    // Incompressible 4 KB values: their size on disk is their size.
    await writer.query(
      `INSERT INTO shop_master.wide SELECT g, (SELECT string_agg(md5(random()::text || g || x), '') FROM generate_series(1, 128) x) FROM generate_series(1, 40) g`,
    );
    const table = (await describeBackfillTable(t.ctx.pool, 'shop_master', 'wide', null))!;
    const until = (await lastSortKey(t.ctx.pool, table))!;
    expect(until).to.deep.equal(['40']);
    // Inserted after the backfill started: past its bound (the stream delivers such rows as INSERTs).
    await writer.query(`INSERT INTO shop_master.wide VALUES (41, 'late')`);
    const q = { table, cursor: null, until, since: null, filter: null, maxRows: 1000, maxBytes: 10_000 };
    const first = await readPage(t.ctx.pool, q);
    expect(first.rows.length, 'about 10 KB of 4 KB rows').to.be.within(2, 3);
    expect(first.more).to.equal(true);
    const second = await readPage(t.ctx.pool, { ...q, cursor: first.cursor });
    expect(Number(second.rows[0]!.fragments[0])).to.equal(first.rows.length + 1);
    const one = await readPage(t.ctx.pool, { ...q, maxBytes: 1024 });
    expect(one.rows.length, 'a row larger than the limit still makes a page').to.equal(1);
    let cursor: string[] | null = null;
    let total = 0;
    for (let pages = 0; pages < 100; pages++) {
      const page = await readPage(t.ctx.pool, { ...q, cursor });
      total += page.rows.length;
      cursor = page.cursor;
      if (!page.more) break;
    }
    expect(total, 'every row once').to.equal(40);
    // Weighed as the JSON the tailer holds, not as stored: 1 MB values that compress to a few KB.
    await writer.query('CREATE TABLE shop_master.squeezed (id int PRIMARY KEY, body text NOT NULL)');
    await writer.query(`INSERT INTO shop_master.squeezed SELECT g, repeat('x', 1024 * 1024) FROM generate_series(1, 8) g`);
    const squeezed = (await describeBackfillTable(t.ctx.pool, 'shop_master', 'squeezed', null))!;
    const big = await readPage(t.ctx.pool, { ...q, table: squeezed, until: ['8'], maxBytes: 2 * 1024 * 1024 });
    expect(big.rows.length, '2 MB of 1 MB rows').to.equal(2);
  });
});
