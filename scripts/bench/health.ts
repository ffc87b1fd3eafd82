import { deliveryHealth, deliveryMinutes } from '../../src/delivery/sql/history.js';
import { insertSubscription } from '../../test/support/subscriptions.js';
import type { Bench } from './run.js';
import { round, summarize } from './stats.js';

// A subscription's health and its per-minute chart with 1,000,000 deliveries in its history (25
// hours of them, a tenth with a failed attempt first), as the API answers GET …/{id} and
// …/{id}/minutes: both read the per-minute rollup. Baseline: the scan of 25 hours of deliveries
// and their attempts that the rollup replaced, run on the same rows.

const ROWS = Number(process.env.BENCH_HEALTH_ROWS ?? 1_000_000);
const CALLS = 30;

// The statement the minutes call ran before the rollup (for the baseline only).
const SCAN = `WITH recent AS (
    SELECT id, delivered_at FROM walgate.deliveries WHERE webhook_id = $1 AND created_at >= $2
  ), outcomes AS (
    SELECT delivered_at AS at, true AS ok FROM recent WHERE delivered_at >= $3
    UNION ALL
    SELECT a.started_at, false FROM recent r JOIN walgate.delivery_attempts a ON a.delivery_id = r.id
     WHERE a.started_at >= $3 AND (a.http_status IS NULL OR a.http_status NOT BETWEEN 200 AND 299)
  )
  SELECT floor(extract(epoch FROM at) / 60)::bigint * 60000 AS minute,
         count(*) FILTER (WHERE ok)::int AS delivered, count(*) FILTER (WHERE NOT ok)::int AS failed
    FROM outcomes GROUP BY 1`;

async function timed(calls: number, call: () => Promise<unknown>): Promise<number[]> {
  const ms: number[] = [];
  for (let i = 0; i < calls; i++) {
    const t = performance.now();
    await call();
    ms.push(performance.now() - t);
  }
  return ms;
}

export async function healthCall(b: Bench): Promise<void> {
  await b.pool.query('CREATE TABLE IF NOT EXISTS bench_master.health_rows (id int PRIMARY KEY)');
  const id = await insertSubscription(b.ctx, {
    projectId: 'bench',
    environment: 'master',
    schema: 'bench_master',
    table: 'health_rows',
    url: `${b.receiver.url}/health`,
    secret: b.secret,
  });
  // In batches, through the same triggers as the tailer's writes.
  for (let from = 1; from <= ROWS; from += 100_000) {
    const to = Math.min(ROWS, from + 99_999);
    await b.pool.query(
      `WITH d AS (
         INSERT INTO walgate.deliveries (id, webhook_id, event_id, event_type, status, attempts, http_status, next_attempt_at, created_at, delivered_at)
         SELECT 'del_health_' || g, $1, 'evt_health_' || g, 'INSERT', 'delivered', 1, 200, t, t, t + interval '20 ms'
           FROM generate_series($2::int, $3::int) g, LATERAL (SELECT now() - (g::double precision / $4) * interval '25 hours' AS t) x
         RETURNING id, created_at)
       INSERT INTO walgate.delivery_attempts (delivery_id, attempt, started_at, duration_ms, http_status, error)
       SELECT id, 1, created_at, 10, 500, 'HTTP 500' FROM d WHERE right(id, 1) = '0'`,
      [id, from, to, ROWS],
    );
  }
  await b.pool.query('ANALYZE walgate.deliveries, walgate.delivery_attempts, walgate.delivery_minutes');
  const now = new Date();
  const health = await timed(CALLS, () => deliveryHealth(b.pool, id, now));
  const minutes = await timed(CALLS, () => deliveryMinutes(b.pool, id, now));
  const end = Math.floor(now.getTime() / 60_000) * 60_000 + 60_000;
  const scan = await timed(3, () =>
    b.pool.query(SCAN, [id, new Date(end - 3_600_000 - 24 * 3_600_000), new Date(end - 3_600_000)]),
  );
  const value = summarize(minutes.map((n) => round(n)));
  const baseline = summarize(scan.map((n) => round(n)));
  b.record({
    path: `health: GET …/{id}/minutes with ${ROWS.toLocaleString('en')} history rows (per-minute rollup)`,
    unit: 'ms',
    value,
    baseline: { name: 'scan of 25 h of history', value: baseline },
    ratio: round(value.median / baseline.median, 3),
    target: '≤ 20 ms',
    met: value.max <= 20,
    extra: { healthMs: summarize(health.map((n) => round(n))) },
  });
  await b.pool.query('DELETE FROM walgate.webhooks WHERE id = $1', [id]);
}
