import type { Queryable } from '../../core/db/pool.js';
import type { EndpointKey } from './breakers.js';

// The catch-up after an endpoint's breaker closed (delivery/catch-up.ts): its deliveries that wait
// for a retry slot become due now.

/** The active subscriptions of an endpoint: every one with this exact URL in this project and environment. */
export async function endpointSubscriptions(db: Queryable, key: EndpointKey): Promise<string[]> {
  const { rows } = await db.query<{ id: string }>(
    `SELECT id FROM walgate.webhooks WHERE project_id = $1 AND environment = $2 AND url = $3 AND active ORDER BY id`,
    [key.projectId, key.environment, key.url],
  );
  return rows.map((r) => r.id);
}

export interface ForwardedPage {
  /** Deliveries whose retry slot is now. */
  moved: number;
  /** Retry slots the page found (fewer than asked: the range is walked to its end). */
  found: number;
  /** The latest slot the page found: the next page starts there (ties included). */
  last: Date | null;
}

/**
 * Brings one page of a subscription's retry slots forward to `now`, the earliest slots first,
 * from `from` on — while the endpoint's breaker is still closed with no failure counted since:
 * once it fails again, the slots it sets are backoff and stay.
 *
 * One range of deliveries_due_by_webhook (sql/003): the future part of the subscription's due
 * range, where apart from retry slots only leases lie, as many as are in flight — not its backlog
 * of due deliveries. Leases (retry_slot false, sql/044) are never moved: a leased delivery brought
 * forward would be claimed again while its request runs, and sent twice. A delivery claimed between
 * the page's read and its update is skipped: the update checks retry_slot again on the row it locks.
 * Row ordering is not touched: the claim decides what may go, as ever; this only changes when. Of
 * a row-ordered subscription only each row's head waits for a slot (the changes behind it were
 * parked due, sql/035), so its pages hold heads — the deliveries that hold the rest back.
 */
export async function bringForwardPage(
  db: Queryable,
  key: EndpointKey,
  webhookId: string,
  o: { now: Date; from: Date; limit: number },
): Promise<ForwardedPage> {
  const { rows } = await db.query<ForwardedPage>(
    `WITH closed AS (
       SELECT 1 FROM walgate.endpoint_breakers
        WHERE project_id = $1 AND environment = $2 AND url = $3 AND opened_until IS NULL AND consecutive_failures = 0
     ), page AS (
       SELECT d.id, d.next_attempt_at FROM walgate.deliveries d
        WHERE d.webhook_id = $4 AND d.status IN ('pending', 'retrying') AND d.next_attempt_at > $5 AND d.next_attempt_at >= $6
          AND d.retry_slot AND EXISTS (SELECT 1 FROM closed)
        ORDER BY d.next_attempt_at LIMIT $7
     ), moved AS (
       UPDATE walgate.deliveries d SET next_attempt_at = $5
        WHERE d.id = ANY (ARRAY(SELECT id FROM page)) AND d.retry_slot AND d.status IN ('pending', 'retrying') AND d.next_attempt_at > $5
       RETURNING 1
     )
     SELECT (SELECT count(*) FROM moved)::int AS moved, (SELECT count(*) FROM page)::int AS found, (SELECT max(next_attempt_at) FROM page) AS last`,
    [key.projectId, key.environment, key.url, webhookId, o.now, o.from, o.limit],
  );
  return rows[0]!;
}
