import { expect } from 'chai';
import { createPool, type Pool } from '../../src/core/db/pool.js';
import type { DeliveredEntry } from '../../src/delivery/journal.js';
import { writeDelivered } from '../../src/delivery/sql/journal.js';
import { GATHER_MS, Journal } from '../../src/delivery/journal.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';

// The stream's history rows keep the body exactly as sent (WEBHOOK_KEEP_PAYLOADS). The bodies
// travel beside the batch's JSON document as one binary parameter cut by byte offsets: each row
// must get its own body, byte for byte (multi-byte characters before it shift every later offset),
// and a row that kept none must get none.
describe('delivery: the history write keeps each body as sent', () => {
  let db: TestDatabase;
  let pool: Pool;
  before(async () => {
    db = await createTestDatabase();
    pool = createPool(db.url, { max: 2 });
    await pool.query(`INSERT INTO walgate.projects (id) VALUES ('shop')`);
    await pool.query(`INSERT INTO walgate.environments (project_id, name, schema_name) VALUES ('shop', 'master', 'shop_master')`);
    await pool.query(
      `INSERT INTO walgate.webhooks (id, project_id, environment, schema_name, table_name, events, url, secret)
       VALUES ('wh_1', 'shop', 'master', 'shop_master', 'orders', '{INSERT}', 'https://hooks.example.com/a', 'sealed')`,
    );
  });
  after(async () => {
    await pool?.end();
    await db?.drop();
  });

  const entry = (id: string, payload: string | null): DeliveredEntry => {
    const at = new Date('2026-11-25T12:00:00.123Z');
    return {
      delivery: { id, webhookId: 'wh_1', eventId: `evt_${id}`, eventType: 'INSERT', select: null } as DeliveredEntry['delivery'],
      history: 'full',
      createdAt: at,
      httpStatus: 200,
      startedAt: at,
      durationMs: 3,
      responseBody: 'ok',
      kept:
        payload === null
          ? null
          : { payload, requestHeaders: { 'webhook-id': `evt_${id}` }, responseHeaders: { 'content-type': 'text/plain' } },
      deliveredAt: at,
      done: () => undefined,
    };
  };

  async function stored(): Promise<Record<string, { payload: string | null; request_headers: unknown }>> {
    const { rows } = await pool.query<{ id: string; payload: string | null; request_headers: unknown }>(
      `SELECT id, payload, request_headers FROM walgate.deliveries ORDER BY id`,
    );
    return Object.fromEntries(rows.map((r) => [r.id, { payload: r.payload, request_headers: r.request_headers }]));
  }

  it('a batch of kept and unkept bodies: each row gets its own body, byte for byte; an unkept one none', async () => {
    const bodies = {
      d_1: '{"id":"evt_d_1","record":{"note":"caf\\u00e9 \\"quoted\\" \\\\ back","emoji":"🦆"},  "spaced" : [1, 2.50, -0]}',
      d_3: '{"id":"evt_d_3","record":{"nl":"a\\nb","sep":"\\u001e"}}',
    };
    await writeDelivered(pool, [entry('d_1', bodies.d_1), entry('d_2', null), entry('d_3', bodies.d_3)]);
    const rows = await stored();
    expect(rows.d_1).to.deep.equal({ payload: bodies.d_1, request_headers: { 'webhook-id': 'evt_d_1' } });
    expect(rows.d_2).to.deep.equal({ payload: null, request_headers: null });
    expect(rows.d_3!.payload).to.equal(bodies.d_3);
    // Times travel as milliseconds: to the millisecond, not rounded to the second.
    const { rows: times } = await pool.query<{ created_at: Date; delivered_at: Date; first_attempt_started_at: Date }>(
      `SELECT created_at, delivered_at, first_attempt_started_at FROM walgate.deliveries WHERE id = 'd_1'`,
    );
    expect(Object.values(times[0]!).map((t) => t.toISOString())).to.deep.equal(Array(3).fill('2026-11-25T12:00:00.123Z'));
  });

  it('any text body round-trips, even one holding characters no JSON body holds raw (U+001E, a tab, CR)', async () => {
    const odd = '{"id":"evt_d_5","record":{"x":"a\u001eb\tc\r"}}';
    expect(odd).to.include(String.fromCharCode(0x1e));
    await writeDelivered(pool, [entry('d_4', '{"id":"evt_d_4","é":"ü"}'), entry('d_5', odd), entry('d_8', '{"id":"evt_d_8"}')]);
    const rows = await stored();
    expect([rows.d_4!.payload, rows.d_5!.payload, rows.d_8!.payload]).to.deep.equal(['{"id":"evt_d_4","é":"ü"}', odd, '{"id":"evt_d_8"}']);
  });

  it('a delivery written again (the same change read again after a crash) keeps its first row', async () => {
    await writeDelivered(pool, [entry('d_9', '{"first":true}')]);
    await writeDelivered(pool, [entry('d_9', '{"second":true}'), entry('d_10', '{"id":"evt_d_10"}')]);
    const rows = await stored();
    expect([rows.d_9!.payload, rows.d_10!.payload]).to.deep.equal(['{"first":true}', '{"id":"evt_d_10"}']);
  });

  it('a batch with no body kept at all', async () => {
    await writeDelivered(pool, [entry('d_6', null), entry('d_7', null)]);
    const rows = await stored();
    expect([rows.d_6!.payload, rows.d_7!.payload]).to.deep.equal([null, null]);
  });

  it('history "failures": a batch of both kinds writes rows for the full ones only, and counts every one per minute', async () => {
    await pool.query(
      `INSERT INTO walgate.webhooks (id, project_id, environment, schema_name, table_name, events, url, secret, history)
       VALUES ('wh_2', 'shop', 'master', 'shop_master', 'orders', '{INSERT}', 'https://hooks.example.com/b', 'sealed', 'failures')`,
    );
    const minutes = async () =>
      (
        await pool.query<{ webhook_id: string; minute: Date; delivered: number }>(
          `SELECT webhook_id, minute, sum(delivered)::int AS delivered FROM walgate.delivery_minutes GROUP BY 1, 2 ORDER BY 1, 2`,
        )
      ).rows.map((r) => `${r.webhook_id} ${r.minute.toISOString()} ${r.delivered}`);
    const before = await minutes();
    const counted = (id: string, webhookId: string, at: string): DeliveredEntry => ({
      ...entry(id, `{"id":"evt_${id}"}`),
      delivery: { id, webhookId, eventId: `evt_${id}`, eventType: 'INSERT', select: null } as DeliveredEntry['delivery'],
      history: 'failures',
      deliveredAt: new Date(at),
    });
    // Only counted (one statement), then both kinds at once — wh_1 in both modes too (a PATCH
    // between two answers), so the count and the rows' trigger add to one rollup row in one statement.
    await writeDelivered(pool, [counted('f_1', 'wh_2', '2026-11-25T12:00:10Z'), counted('f_2', 'wh_2', '2026-11-25T12:01:59.999Z')]);
    await writeDelivered(pool, [
      counted('f_3', 'wh_2', '2026-11-25T12:00:59.999Z'),
      entry('m_1', '{"id":"evt_m_1"}'),
      counted('f_4', 'wh_1', '2026-11-25T12:00:00.500Z'),
      counted('f_5', 'wh_3_gone', '2026-11-25T12:00:00Z'),
    ]);
    const { rows } = await pool.query<{ id: string }>(`SELECT id FROM walgate.deliveries WHERE id LIKE 'f\\_%' OR id = 'm_1'`);
    expect(rows.map((r) => r.id)).to.deep.equal(['m_1']);
    const added = (await minutes()).filter((m) => !before.includes(m));
    expect(added).to.deep.equal([
      // wh_1's minute 12:00 held 1 per earlier row (d_*, g_*…); now 2 more: m_1 (its row) and f_4 (counted).
      ...(await minutes()).filter((m) => m.startsWith('wh_1 2026-11-25T12:00')),
      'wh_2 2026-11-25T12:00:00.000Z 2',
      'wh_2 2026-11-25T12:01:00.000Z 1',
    ]);
    const wh1 = (m: string[]) => Number(m.find((x) => x.startsWith('wh_1 2026-11-25T12:00'))!.split(' ')[2]);
    expect(wh1(await minutes()) - wh1(before)).to.equal(2);
    const { rows: last } = await pool.query<{ at: Date }>(
      `SELECT max(last_delivered_at) AS at FROM walgate.delivery_minutes WHERE webhook_id = 'wh_2' AND minute = '2026-11-25T12:00:00Z'`,
    );
    expect(last[0]!.at.toISOString()).to.equal('2026-11-25T12:00:59.999Z');
  });

  it('the journal gathers delivered rows handed over one by one into a few statements, and writes a lone one soon', async () => {
    const journal = new Journal(pool, (err) => {
      throw err;
    });
    const done: string[] = [];
    const handOver = (id: string) => journal.delivered({ ...entry(id, `{"id":"evt_${id}"}`), done: () => done.push(id) });
    const ids = Array.from({ length: 100 }, (_, i) => `g_${i}`);
    const handing = performance.now();
    for (const id of ids) {
      handOver(id);
      await new Promise((resolve) => setTimeout(resolve, 1));
    }
    // At least 100 ms, and more on a loaded machine (a 1 ms timer fires late): the bound follows
    // the time the hand-over really took, not the 100 ms it would take on an idle one.
    const handedOverMs = performance.now() - handing;
    const deadline = Date.now() + 5000;
    while (done.length < ids.length && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 5));
    expect(done.sort()).to.deep.equal([...ids].sort());
    // One statement per GATHER_MS or so, not one per row or two.
    expect(journal.stats.batches).to.be.within(2, Math.min(50, Math.ceil(handedOverMs / GATHER_MS) + 4));
    const { rows } = await pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM walgate.deliveries WHERE id LIKE 'g\\_%'`);
    expect(rows[0]!.n).to.equal(100);

    const started = performance.now();
    handOver('lone');
    while (!done.includes('lone') && performance.now() - started < 5000) await new Promise((resolve) => setTimeout(resolve, 1));
    expect(done).to.include('lone');
    expect(performance.now() - started).to.be.below(GATHER_MS + 1000);
    journal.close();
  });
});
