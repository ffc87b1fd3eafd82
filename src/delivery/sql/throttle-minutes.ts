import type { Queryable } from '../../core/db/pool.js';
import type { ThrottleWaits } from '../throttle.js';

/**
 * Adds the throttle's waits to the per-minute rollup (sql/082) under this backend's row, one
 * statement for any number of subscriptions and minutes. A subscription deleted meanwhile is left
 * out (the JOIN), not an error.
 */
export async function recordThrottleWaits(db: Queryable, waits: readonly ThrottleWaits[]): Promise<void> {
  if (waits.length === 0) return;
  await db.query(
    `INSERT INTO walgate.delivery_minutes AS m (webhook_id, minute, backend, throttled, throttled_ms)
     SELECT c.webhook_id, to_timestamp(c.minute / 1000.0), pg_backend_pid(), c.n, round(c.ms)::bigint
       FROM unnest($1::text[], $2::float8[], $3::int[], $4::float8[]) AS c(webhook_id, minute, n, ms)
       JOIN walgate.webhooks w ON w.id = c.webhook_id
     ON CONFLICT (webhook_id, minute, backend) DO UPDATE
        SET throttled = m.throttled + excluded.throttled, throttled_ms = m.throttled_ms + excluded.throttled_ms`,
    [waits.map((w) => w.webhookId), waits.map((w) => w.minute), waits.map((w) => w.waits), waits.map((w) => w.waitedMs)],
  );
}
