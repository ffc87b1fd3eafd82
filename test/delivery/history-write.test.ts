import { expect } from 'chai';
import { createPool, type Pool } from '../../src/core/db/pool.js';
import type { DeliveredEntry } from '../../src/delivery/journal.js';
import { writeDelivered } from '../../src/delivery/sql/journal.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';

// The stream's history rows keep the body exactly as sent (WEBHOOK_KEEP_PAYLOADS). The bodies
// travel beside the batch's JSON document, joined by U+001E: each row must get its own body, byte
// for byte, a row that kept none must get none, and a body holding a raw U+001E (which no JSON
// body can) must never be split into its neighbours' rows.
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
    const at = new Date('2026-11-25T12:00:00.000Z');
    return {
      delivery: { id, webhookId: 'wh_1', eventId: `evt_${id}`, eventType: 'INSERT', select: null } as DeliveredEntry['delivery'],
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
  });

  it('a body with a raw U+001E in it (not JSON): refused whole, as before, never split into its neighbours', async () => {
    const odd = '{"id":"evt_d_5","record":{"x":"a\u001eb"}}';
    expect(odd).to.include(String.fromCharCode(0x1e));
    const refused = await writeDelivered(pool, [entry('d_4', '{"id":"evt_d_4"}'), entry('d_5', odd)]).then(
      () => null,
      (err: Error) => err,
    );
    expect(refused?.message).to.match(/json/i);
    const rows = await stored();
    expect(rows.d_4, 'nothing of that batch written').to.equal(undefined);
    expect(rows.d_5).to.equal(undefined);
  });

  it('a batch with no body kept at all', async () => {
    await writeDelivered(pool, [entry('d_6', null), entry('d_7', null)]);
    const rows = await stored();
    expect([rows.d_6!.payload, rows.d_7!.payload]).to.deep.equal([null, null]);
  });
});
