import type { Queryable } from '../../core/db/pool.js';
import { deliveryId } from '../../tailer/events.js';
import { breakerView, type BreakerKey, type BreakerView } from '../breaker.js';
import { DELIVERY_COLUMNS, deliveryView, type DeliveryRow, type DeliveryView } from './history.js';

// Read-only views for the console beyond one subscription's log: an endpoint's health over a day
// and a week, an event's deliveries across subscriptions, and the breakers of a page of
// subscriptions in one statement.

export interface HealthWindow {
  window: '24h' | '7d';
  /** Deliveries delivered in the window (the rollup). */
  delivered: number;
  /** Of the window's newest deliveries (HEALTH_SAMPLE), those dead and those not finished yet. */
  dead: number;
  unfinished: number;
  /** Requests in the window: answered 2xx (one per delivered delivery), or not (the rollup). */
  attemptsSucceeded: number;
  attemptsFailed: number;
  /** Requests that waited for the throttle's turn (the rollup), and how long in all (ms). */
  throttled: number;
  throttledMs: number;
  /** attemptsSucceeded / all attempts; null without an attempt. */
  successRate: number | null;
  /** Attempt durations (ms) of the newest deliveries' attempts; null without an attempt. */
  latencyP50Ms: number | null;
  latencyP95Ms: number | null;
}

const WINDOWS = [
  ['24h', 24 * 3_600_000],
  ['7d', 7 * 24 * 3_600_000],
] as const;

/** Latency and the dead and unfinished counts are read from at most this many of the window's newest deliveries. */
export const HEALTH_SAMPLE = 5000;

/**
 * A subscription's health over the last 24 hours and 7 days, at a cost that does not grow with
 * traffic: delivered deliveries and failed requests come from the per-minute rollup
 * (delivery_minutes, written with the history); latency percentiles and the dead and unfinished
 * counts from the window's newest HEALTH_SAMPLE deliveries (an index range of deliveries_recent)
 * and their attempts.
 */
export async function endpointHealth(db: Queryable, webhookId: string, now: Date): Promise<HealthWindow[]> {
  const windows: HealthWindow[] = [];
  for (const [name, ms] of WINDOWS) {
    const since = new Date(now.getTime() - ms);
    const { rows } = await db.query<Omit<HealthWindow, 'window' | 'successRate'>>(
      `WITH recent AS (
         SELECT id, status, first_attempt_started_at, first_attempt_duration_ms FROM walgate.deliveries
          WHERE webhook_id = $1 AND created_at >= $2 ORDER BY created_at DESC LIMIT $3
       ), attempts AS (
         SELECT first_attempt_duration_ms AS ms FROM recent WHERE first_attempt_started_at IS NOT NULL
         UNION ALL
         SELECT a.duration_ms FROM recent r JOIN walgate.delivery_attempts a ON a.delivery_id = r.id
          WHERE a.started_at >= $2 AND a.duration_ms IS NOT NULL
       ), rollup AS (
         SELECT coalesce(sum(delivered), 0)::int AS delivered, coalesce(sum(failed), 0)::int AS failed,
                coalesce(sum(throttled), 0)::int AS throttled, coalesce(sum(throttled_ms), 0)::float8 AS throttled_ms
           FROM walgate.delivery_minutes WHERE webhook_id = $1 AND minute >= date_trunc('minute', $2::timestamptz)
       )
       SELECT (SELECT delivered FROM rollup) AS delivered,
              (SELECT count(*) FILTER (WHERE status = 'dead')::int FROM recent) AS dead,
              (SELECT count(*) FILTER (WHERE status IN ('pending', 'retrying'))::int FROM recent) AS unfinished,
              (SELECT delivered FROM rollup) AS "attemptsSucceeded", (SELECT failed FROM rollup) AS "attemptsFailed",
              (SELECT throttled FROM rollup) AS throttled, (SELECT throttled_ms FROM rollup) AS "throttledMs",
              percentile_disc(0.5) WITHIN GROUP (ORDER BY ms) AS "latencyP50Ms",
              percentile_disc(0.95) WITHIN GROUP (ORDER BY ms) AS "latencyP95Ms"
         FROM attempts`,
      [webhookId, since, HEALTH_SAMPLE],
    );
    const r = rows[0]!;
    const total = r.attemptsSucceeded + r.attemptsFailed;
    windows.push({ window: name, ...r, throttledMs: Math.round(r.throttledMs), successRate: total ? r.attemptsSucceeded / total : null });
  }
  return windows;
}

export type EventDelivery = DeliveryView & { webhookId: string; table: string; url: string };

/**
 * The deliveries of one event across the given subscriptions. A delivery's id is made of its
 * event's and its subscription's (tailer/events.ts), so this is one primary-key lookup per
 * subscription, with no index on event_id to keep up on every write.
 */
export async function eventDeliveries(db: Queryable, eventId: string, webhookIds: readonly string[]): Promise<EventDelivery[]> {
  if (!/^evt_\w{1,120}$/.test(eventId) || webhookIds.length === 0) return [];
  const { rows } = await db.query<DeliveryRow & { webhook_id: string; table_name: string; url: string }>(
    `SELECT ${DELIVERY_COLUMNS}, d.webhook_id, w.table_name, w.url
       FROM walgate.deliveries d JOIN walgate.webhooks w ON w.id = d.webhook_id
      WHERE d.id = ANY ($1::text[]) AND d.event_id = $2
      ORDER BY w.table_name, w.id`,
    [webhookIds.map((w) => deliveryId(w, eventId)), eventId],
  );
  return rows.map((r) => ({ ...deliveryView(r), webhookId: r.webhook_id, table: r.table_name, url: r.url }));
}

/** The breakers of several endpoints at once (the subscription list), in the order given. */
export async function breakerStates(db: Queryable, keys: readonly BreakerKey[], now: Date): Promise<BreakerView[]> {
  if (keys.length === 0) return [];
  const { rows } = await db.query<{ i: number; consecutive_failures: number | null; opened_until: Date | null }>(
    `SELECT k.i::int AS i, b.consecutive_failures, b.opened_until
       FROM unnest($1::text[], $2::text[], $3::text[]) WITH ORDINALITY AS k(project_id, environment, url, i)
       LEFT JOIN walgate.endpoint_breakers b USING (project_id, environment, url)
      ORDER BY k.i`,
    [keys.map((k) => k.projectId), keys.map((k) => k.environment), keys.map((k) => k.url)],
  );
  return rows.map((r) => breakerView(r, now));
}
