import type { Queryable } from '../../core/db/pool.js';

// Row ordering's reads of the retry queue (delivery/row-order.ts): which row keys it holds unfinished.

/** A row key of a subscription (row ordering; tailer/order-keys.ts). */
export interface SubscriptionOrderKey {
  webhookId: string;
  key: string;
}

/**
 * Of these row keys, the ones with an unfinished (pending or retrying) delivery in the queue: the
 * stream keeps parking their changes behind it (delivery/row-order.ts). Index probes only (sql/009).
 */
export async function unfinishedOrderKeys(db: Queryable, keys: SubscriptionOrderKey[]): Promise<SubscriptionOrderKey[]> {
  if (keys.length === 0) return [];
  const { rows } = await db.query<SubscriptionOrderKey>(
    `SELECT k.webhook_id AS "webhookId", k.key FROM unnest($1::text[], $2::text[]) AS k(webhook_id, key)
      WHERE EXISTS (SELECT 1 FROM walgate.deliveries d WHERE d.order_key = k.key AND d.order_key IS NOT NULL AND d.status IN ('pending', 'retrying'))
         OR EXISTS (SELECT 1 FROM walgate.deliveries d WHERE d.order_key_old = k.key AND d.order_key_old IS NOT NULL AND d.status IN ('pending', 'retrying'))
         OR EXISTS (SELECT 1 FROM walgate.deliveries d WHERE d.order_key = k.key AND d.holds_row)
         OR EXISTS (SELECT 1 FROM walgate.deliveries d WHERE d.order_key_old = k.key AND d.holds_row AND d.order_key_old IS NOT NULL)`,
    [keys.map((k) => k.webhookId), keys.map((k) => k.key)],
  );
  return rows;
}

/** Unfinished deliveries with row keys, per subscription (of these subscriptions, or all). */
export async function unfinishedOrderKeyCounts(db: Queryable, webhookIds?: string[]): Promise<Map<string, number>> {
  const { rows } = await db.query<{ webhook_id: string; n: number }>(
    `SELECT webhook_id, count(*)::int AS n FROM walgate.deliveries
      WHERE (status IN ('pending', 'retrying') OR holds_row) AND order_key IS NOT NULL AND ($1::text[] IS NULL OR webhook_id = ANY ($1))
      GROUP BY webhook_id`,
    [webhookIds ?? null],
  );
  return new Map(rows.map((r) => [r.webhook_id, r.n]));
}

/** The row keys of these subscriptions' unfinished deliveries, each once. */
export async function unfinishedOrderKeysOf(db: Queryable, webhookIds: string[]): Promise<SubscriptionOrderKey[]> {
  const { rows } = await db.query<SubscriptionOrderKey>(
    `SELECT webhook_id AS "webhookId", order_key AS key FROM walgate.deliveries
      WHERE status IN ('pending', 'retrying') AND order_key IS NOT NULL AND webhook_id = ANY ($1)
     UNION
     SELECT webhook_id, order_key_old FROM walgate.deliveries
      WHERE status IN ('pending', 'retrying') AND order_key_old IS NOT NULL AND webhook_id = ANY ($1)
     UNION
     SELECT webhook_id, order_key FROM walgate.deliveries WHERE holds_row AND webhook_id = ANY ($1)
     UNION
     SELECT webhook_id, order_key_old FROM walgate.deliveries WHERE holds_row AND order_key_old IS NOT NULL AND webhook_id = ANY ($1)`,
    [webhookIds],
  );
  return rows;
}
