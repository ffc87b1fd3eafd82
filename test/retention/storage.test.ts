import { expect } from 'chai';
import { eventually, startPipeline, type Pipeline } from '../delivery/support.js';

// What one delivered change costs on disk (README "Storage and retention"): the history tables'
// pg_total_relation_size (heap, indexes, TOAST) over a few thousand deliveries of a small row.

const N = Number(process.env.STORAGE_N ?? 300);
const TABLES = ['deliveries', 'delivery_attempts', 'events'] as const;

describe('retention: bytes on disk per delivered change', function () {
  this.timeout(400_000);
  let p: Pipeline;
  before(async () => {
    p = await startPipeline();
  });
  after(() => p?.close());

  const sizes = async () => {
    const { rows } = await p.t.ctx.pool.query(
      `SELECT t, pg_total_relation_size(('walgate.' || t)::regclass)::bigint AS bytes FROM unnest($1::text[]) t`,
      [TABLES],
    );
    return Object.fromEntries(rows.map((r) => [r.t, Number(r.bytes)]));
  };

  it(`measures the history of ${N} deliveries`, async () => {
    const wh = await p.subscribe();
    const before = await sizes();
    const started = Date.now();
    for (let i = 0; i < N; i += 100) {
      await p.writer.query(`INSERT INTO shop_master.orders SELECT g, 'new', g * 1.5 FROM generate_series($1::int, $2::int) g`, [
        i + 1,
        i + 100,
      ]);
    }
    await eventually(
      async () =>
        (await p.t.ctx.pool.query(`SELECT count(*)::int AS n FROM walgate.deliveries WHERE webhook_id = $1 AND status = 'delivered'`, [wh]))
          .rows[0].n,
      (n) => n === N,
      300_000,
    );
    console.log(`      ${N} delivered in ${Date.now() - started} ms`);
    await p.t.ctx.pool.query('VACUUM walgate.deliveries, walgate.delivery_attempts, walgate.events');
    const after = await sizes();
    const perDelivery = Object.fromEntries(TABLES.map((t) => [t, Math.round((after[t] - before[t]) / N)]));
    const total = TABLES.reduce((s, t) => s + perDelivery[t]!, 0);
    console.log(`      bytes per delivered change (a 3-column row): ${JSON.stringify(perDelivery)}, total ${total}`);
    // Measured about 2.3 kB; a bound far above it, so only a change of kind (a payload stored per
    // attempt, say) trips it.
    expect(total).to.be.below(8192);
  });
});
