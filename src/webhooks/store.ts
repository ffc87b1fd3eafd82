import { selectList } from '../core/db/columns.js';
import type { Queryable } from '../core/db/pool.js';
import type { BatchSettings } from '../delivery/batch.js';

// Every statement on walgate.webhooks. The tailer reads this table's changes from the WAL, so every
// change writes updated_at, and the secret is only ever stored sealed.

export interface WebhookRow {
  id: string;
  projectId: string;
  environment: string;
  schemaName: string;
  table: string;
  events: string[];
  url: string;
  secret: Buffer;
  active: boolean;
  filter: Record<string, unknown> | null;
  select: string[] | null;
  /** 'group': the changes whose `orderingBy` values are equal go one at a time (webhooks/ordering.ts). */
  ordering: 'none' | 'row' | 'group';
  /** The group's columns, as sent; null unless `ordering` is 'group'. */
  orderingBy: string[] | null;
  /** 'failures': a change delivered at its first attempt leaves no history row, only its count. */
  history: 'full' | 'failures';
  /** With row or group ordering: 'hold' keeps a row's (a group's) later changes behind its dead letter. */
  onDead: 'skip' | 'hold';
  /** Batched delivery (maxEvents 1: off); always all three, the defaults when never set. */
  batch: BatchSettings;
  createdAt: Date;
  updatedAt: Date;
  /** Why delivery disabled it (a receiver answered 410 Gone), and when; null while enabled by hand. */
  disabledReason: string | null;
  disabledAt: Date | null;
  /** The secret before the last rotation, and until when it still signs. */
  previousSecret: Buffer | null;
  previousSecretUntil: Date | null;
  /** Custom request headers: the names (lower case) in clear, the values sealed together (delivery/custom-headers.ts). */
  headerNames: string[];
  headerValues: Buffer | null;
  /** The subscription's own retry schedule (retry-policy.ts); null: the environment's, else the platform's. */
  retryDelaysMs: number[] | null;
  /** The throttle (rate-limit.ts): requests a second, and at once after a quiet spell; null: none. */
  rateLimitPerSecond: number | null;
  rateLimitBurst: number | null;
  /**
   * A subscription to a broker destination (docs/destinations.md): `url` then holds its address
   * (delivery/destinations/address.ts); these keep the templates as sent. Null for an https: URL.
   */
  destinationId?: string | null;
  destinationSubject?: string | null;
  destinationExchange?: string | null;
  destinationRoutingKey?: string | null;
  /** Read only: the destination's name, for the view. */
  destinationName?: string | null;
}

const COLUMNS = selectList<WebhookRow>({
  id: 'id',
  projectId: 'project_id',
  environment: 'environment',
  schemaName: 'schema_name',
  table: 'table_name',
  events: 'events',
  url: 'url',
  secret: 'secret',
  active: 'active',
  filter: 'filter',
  select: 'select_fields',
  ordering: 'ordering',
  orderingBy: 'ordering_by',
  history: 'history',
  onDead: 'on_dead',
  batch: `json_build_object('maxEvents', batch_max_events, 'maxWaitMs', batch_max_wait_ms, 'maxBytes', batch_max_bytes)`,
  createdAt: 'created_at',
  updatedAt: 'updated_at',
  disabledReason: 'disabled_reason',
  disabledAt: 'disabled_at',
  previousSecret: 'previous_secret',
  previousSecretUntil: 'previous_secret_until',
  headerNames: 'header_names',
  headerValues: 'header_values',
  retryDelaysMs: 'retry_delays_ms',
  rateLimitPerSecond: 'rate_limit_per_second',
  rateLimitBurst: 'rate_limit_burst',
  destinationId: 'destination_id',
  destinationSubject: 'destination_subject',
  destinationExchange: 'destination_exchange',
  destinationRoutingKey: 'destination_routing_key',
  destinationName: '(SELECT d.name FROM walgate.destinations d WHERE d.id = destination_id)',
});

export async function insertWebhook(db: Queryable, w: WebhookRow): Promise<WebhookRow> {
  const { rows } = await db.query<WebhookRow>(
    `INSERT INTO walgate.webhooks (id, project_id, environment, schema_name, table_name, events, url, secret, active, filter, select_fields, ordering,
                                   created_at, updated_at, header_names, header_values, history, on_dead,
                                   batch_max_events, batch_max_wait_ms, batch_max_bytes, ordering_by, retry_delays_ms,
                                   rate_limit_per_second, rate_limit_burst,
                                   destination_id, destination_subject, destination_exchange, destination_routing_key)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24, $25,
             $26, $27, $28, $29) RETURNING ${COLUMNS}`,
    [
      w.id,
      w.projectId,
      w.environment,
      w.schemaName,
      w.table,
      w.events,
      w.url,
      w.secret,
      w.active,
      w.filter === null ? null : JSON.stringify(w.filter),
      w.select,
      w.ordering,
      w.createdAt,
      w.updatedAt,
      w.headerNames,
      w.headerValues,
      w.history,
      w.onDead,
      w.batch.maxEvents,
      w.batch.maxWaitMs,
      w.batch.maxBytes,
      w.orderingBy,
      w.retryDelaysMs,
      w.rateLimitPerSecond,
      w.rateLimitBurst,
      ...destinationValues(w),
    ],
  );
  return rows[0]!;
}

function destinationValues(w: WebhookRow): Array<string | null> {
  return [w.destinationId ?? null, w.destinationSubject ?? null, w.destinationExchange ?? null, w.destinationRoutingKey ?? null];
}

export async function findWebhook(
  db: Queryable,
  projectId: string,
  environment: string,
  id: string,
  lock = false,
): Promise<WebhookRow | undefined> {
  const { rows } = await db.query<WebhookRow>(
    `SELECT ${COLUMNS} FROM walgate.webhooks WHERE id = $1 AND project_id = $2 AND environment = $3${lock ? ' FOR UPDATE' : ''}`,
    [id, projectId, environment],
  );
  return rows[0];
}

/** One page, newest first, after the (createdAt, id) of the cursor. */
export async function listWebhooks(
  db: Queryable,
  projectId: string,
  environment: string,
  limit: number,
  after: { createdAt: Date; id: string } | undefined,
): Promise<WebhookRow[]> {
  const { rows } = await db.query<WebhookRow>(
    `SELECT ${COLUMNS} FROM walgate.webhooks
      WHERE project_id = $1 AND environment = $2 AND ($3::timestamptz IS NULL OR (created_at, id) < ($3, $4))
      ORDER BY created_at DESC, id DESC LIMIT $5`,
    [projectId, environment, after?.createdAt ?? null, after?.id ?? null, limit],
  );
  return rows;
}

/** Every subscription id of an environment (a search across them). */
export async function webhookIds(db: Queryable, projectId: string, environment: string): Promise<string[]> {
  const { rows } = await db.query<{ id: string }>('SELECT id FROM walgate.webhooks WHERE project_id = $1 AND environment = $2', [
    projectId,
    environment,
  ]);
  return rows.map((r) => r.id);
}

export async function updateWebhook(db: Queryable, w: WebhookRow): Promise<WebhookRow> {
  const { rows } = await db.query<WebhookRow>(
    `UPDATE walgate.webhooks SET table_name = $2, events = $3, url = $4, secret = $5, active = $6, filter = $7, select_fields = $8, updated_at = $9, ordering = $12,
            disabled_reason = CASE WHEN $6 THEN NULL ELSE disabled_reason END, disabled_at = CASE WHEN $6 THEN NULL ELSE disabled_at END,
            previous_secret = $10, previous_secret_until = $11, header_names = $13, header_values = $14,
            history = $15, on_dead = $16, batch_max_events = $17, batch_max_wait_ms = $18, batch_max_bytes = $19, ordering_by = $20, retry_delays_ms = $21,
            rate_limit_per_second = $22, rate_limit_burst = $23,
            destination_id = $24, destination_subject = $25, destination_exchange = $26, destination_routing_key = $27
      WHERE id = $1 RETURNING ${COLUMNS}`,
    [
      w.id,
      w.table,
      w.events,
      w.url,
      w.secret,
      w.active,
      w.filter === null ? null : JSON.stringify(w.filter),
      w.select,
      w.updatedAt,
      w.previousSecret,
      w.previousSecretUntil,
      w.ordering,
      w.headerNames,
      w.headerValues,
      w.history,
      w.onDead,
      w.batch.maxEvents,
      w.batch.maxWaitMs,
      w.batch.maxBytes,
      w.orderingBy,
      w.retryDelaysMs,
      w.rateLimitPerSecond,
      w.rateLimitBurst,
      ...destinationValues(w),
    ],
  );
  return rows[0]!;
}

/** Deletes a subscription, and its endpoint's breaker unless another subscription shares the endpoint. */
export async function deleteWebhook(db: Queryable, id: string): Promise<void> {
  await db.query(
    `WITH gone AS (DELETE FROM walgate.webhooks WHERE id = $1 RETURNING project_id, environment, url)
     DELETE FROM walgate.endpoint_breakers b USING gone g
      WHERE (b.project_id, b.environment, b.url) = (g.project_id, g.environment, g.url)
        AND NOT EXISTS (SELECT 1 FROM walgate.webhooks w
                         WHERE w.id <> $1 AND (w.project_id, w.environment, w.url) = (g.project_id, g.environment, g.url))`,
    [id],
  );
}

/** Whether any subscription still names schema.table (the table then stays in the publication). */
export async function tableIsWatched(db: Queryable, schemaName: string, table: string): Promise<boolean> {
  const { rowCount } = await db.query('SELECT 1 FROM walgate.webhooks WHERE schema_name = $1 AND table_name = $2 LIMIT 1', [
    schemaName,
    table,
  ]);
  return (rowCount ?? 0) > 0;
}

/**
 * Disables a subscription because of what its receiver answered (410 Gone): it stops taking
 * changes at this commit (the tailer reads the change from the WAL) and the reason shows in its view.
 * Returns false when it was already inactive (or is gone): only the first disabling counts.
 */
export async function disableWebhook(db: Queryable, id: string, reason: string, at: Date): Promise<boolean> {
  const { rowCount } = await db.query(
    'UPDATE walgate.webhooks SET active = false, disabled_reason = $2, disabled_at = $3, updated_at = $3 WHERE id = $1 AND active',
    [id, reason, at],
  );
  return (rowCount ?? 0) > 0;
}
