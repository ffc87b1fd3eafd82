import { setTimeout as sleep } from 'node:timers/promises';
import { expect } from 'chai';
import pg from 'pg';
import { systemClock } from '../../src/core/clock.js';
import type { WalTailer } from '../../src/tailer/tailer.js';
import { managementClient, startTestApi, type TestApi } from '../support/api.js';
import type { HttpClient } from '../support/http.js';
import type { TestReceiver } from '../support/receiver.js';
import { startBackfillPipeline, type BackfillPipeline } from './backfill-support.js';
import { loseSlot } from './support.js';

// A replication slot invalidated by max_slot_wal_keep_size loses every change in between: the gap
// is recorded (schema-changes.test.ts shows that), and its backfill — one call — brings every
// receiver of the affected subscriptions back to the table's state.

describe('tailer: a lost slot’s gap repaired by a backfill', function () {
  this.timeout(300_000);
  let t: TestApi;
  let writer: pg.Client;
  let receiver: TestReceiver;
  let tailer: WalTailer;
  let api: HttpClient;

  let pipeline: BackfillPipeline;
  const start = async () => {
    tailer = await pipeline.startTailer(30_000);
  };

  before(async () => {
    t = await startTestApi({
      env: { WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true', WEBHOOK_RETRY_DELAYS_MS: '0,40,80,120,160' },
      overrides: { clock: systemClock, rateLimits: { management: { name: 'management', points: 100_000, durationSeconds: 60 } } },
    });
    await t.provision({ projectId: 'shop', name: 'master' });
    pipeline = await startBackfillPipeline(t, { pageRows: 500, pageBytes: 4 * 1024 * 1024, concurrency: 2 });
    ({ writer, receiver } = pipeline);
    await writer.query('CREATE TABLE shop_master.stock (id int PRIMARY KEY, qty int NOT NULL, pad text NOT NULL)');
    await start();
    api = await managementClient(t, 'shop');
  });
  after(async () => {
    await pipeline?.close();
    await t?.close();
  });

  /** What a receiver on `path` holds: per row, the record of the newest event (event ids sort in commit order). */
  function mirror(path: string): Map<number, { eventId: string; record: Record<string, unknown> }> {
    const rows = new Map<number, { eventId: string; record: Record<string, unknown> }>();
    for (const r of receiver.requests) {
      if (r.path !== path) continue;
      const body = JSON.parse(r.body) as { id: string; record: Record<string, unknown> & { id: number } };
      const known = rows.get(body.record.id);
      if (!known || known.eventId < body.id) rows.set(body.record.id, { eventId: body.id, record: body.record });
    }
    return rows;
  }

  it('slot invalidated → gap recorded with both subscriptions → POST /_gaps/{id}/backfill → both receivers hold the table', async () => {
    const ids: string[] = [];
    for (const path of ['/a', '/b']) {
      const res = await api.post('/api/rest/_webhooks', {
        projectId: 'shop',
        environment: 'master',
        table: 'stock',
        events: ['INSERT', 'UPDATE', 'DELETE'],
        url: `${receiver.url}${path}`,
        secret: 'whsec-gap-repair-secret-0001',
      });
      expect(res.status, JSON.stringify(res.body)).to.equal(201);
      ids.push(res.body.webhook.id);
    }
    await writer.query(`INSERT INTO shop_master.stock SELECT g, 1, 'before' FROM generate_series(1, 50) g`);
    const until = Date.now() + 20_000;
    while (mirror('/a').size < 50 || mirror('/b').size < 50) {
      if (Date.now() > until) throw new Error('the first rows were not delivered');
      await sleep(50);
    }

    // The tailer stops; while it is away the slot loses the WAL it needed.
    await tailer.stop();
    const slotName = tailer.status().slotName;
    await loseSlot(slotName, async (round) => {
      await writer.query(`INSERT INTO shop_master.stock SELECT g, 0, repeat('x', 2000) FROM generate_series($1::int, $1::int + 999) g`, [
        1000 + round * 1000,
      ]);
      // Rows the receivers already hold change too: only a backfill can tell them.
      await writer.query(`UPDATE shop_master.stock SET qty = qty + 1, pad = 'during' WHERE id <= 50`);
    });
    await start();

    const gaps = await api.get('/api/rest/_gaps?open=true');
    expect(gaps.status, JSON.stringify(gaps.body)).to.equal(200);
    expect(gaps.body.gaps).to.have.length(1);
    const gap = gaps.body.gaps[0];
    expect(gap.reason).to.equal('slot_lost');
    expect(gap.webhookIds).to.have.members(ids);
    // Before the repair the receivers are behind the table.
    const table = new Map(
      (await writer.query<{ id: number; row: Record<string, unknown> }>('SELECT id, to_jsonb(s) AS row FROM shop_master.stock s')).rows.map(
        (r) => [r.id, r.row],
      ),
    );
    expect(mirror('/a').size).to.be.below(table.size);

    const repair = await api.post(`/api/rest/_gaps/${gap.id}/backfill`);
    expect(repair.status, JSON.stringify(repair.body)).to.equal(202);
    expect(repair.body.backfills.map((b: { webhookId: string }) => b.webhookId)).to.have.members(ids);
    for (const b of repair.body.backfills) expect(b).to.include({ gapId: gap.id, state: 'running' });
    // Asked twice: the running backfills are answered, none is added.
    const again = await api.post(`/api/rest/_gaps/${gap.id}/backfill`);
    expect(again.body.backfills.map((b: { id: string }) => b.id)).to.have.members(repair.body.backfills.map((b: { id: string }) => b.id));
    expect((await api.post('/api/rest/_gaps/gap_nope/backfill')).body.error).to.equal('GAP_NOT_FOUND');

    const doneBy = Date.now() + 180_000;
    for (const b of repair.body.backfills) {
      for (;;) {
        const res = await api.get(`/api/rest/_webhooks/${b.webhookId}/backfills/${b.id}`);
        if (res.body.backfill.state === 'done') break;
        if (Date.now() > doneBy) throw new Error(`backfill not done: ${JSON.stringify(res.body)}`);
        await sleep(200);
      }
    }
    for (const path of ['/a', '/b']) {
      const settleBy = Date.now() + 60_000;
      // Compared key by key (jsonb orders keys its own way).
      const same = (a: Record<string, unknown> | undefined, b: Record<string, unknown>) =>
        a !== undefined &&
        Object.keys(b).length === Object.keys(a).length &&
        Object.keys(b).every((k) => JSON.stringify(a[k]) === JSON.stringify(b[k]));
      const differs = () => [...table].filter(([id, row]) => !same(mirror(path).get(id)?.record, row));
      while (differs().length > 0 && Date.now() < settleBy) await sleep(200);
      expect(differs().length, `${path}: rows that differ from the table`).to.equal(0);
      expect(mirror(path).size, path).to.equal(table.size);
    }
  });
});
