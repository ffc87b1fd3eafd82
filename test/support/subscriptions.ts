import { randomBytes } from 'node:crypto';
import type { Context } from '../../src/core/context.js';
import { withTransaction } from '../../src/core/db/pool.js';
import { watchTable } from '../../src/tailer/publication.js';
import { ensureSlot } from '../../src/tailer/slot.js';
import { sealWebhookSecret } from '../../src/delivery/secret.js';

export interface TestSubscription {
  projectId: string;
  environment: string;
  schema: string;
  table: string;
  events?: string[];
  url?: string;
  secret?: string;
  active?: boolean;
  filter?: Record<string, unknown> | null;
  select?: string[] | null;
  /** `{by}`: group ordering, stored as the api stores it (ordering 'group', ordering_by). */
  ordering?: 'none' | 'row' | { by: string[] };
  history?: 'full' | 'failures';
  onDead?: 'skip' | 'hold';
  /** Batched delivery (sql/075): omitted fields take the column defaults. */
  batch?: { maxEvents?: number; maxWaitMs?: number; maxBytes?: number };
}

/**
 * A subscription written the way the management API writes one (row + publication membership in
 * one transaction), for tests of the tailer and the worker that should not depend on the API.
 */
export async function insertSubscription(ctx: Pick<Context, 'pool' | 'secrets'>, s: TestSubscription): Promise<string> {
  const id = `wh_${randomBytes(8).toString('hex')}`;
  await ensureSlot(ctx.pool);
  await withTransaction(ctx.pool, async (c) => {
    await c.query(
      `INSERT INTO walgate.webhooks (id, project_id, environment, schema_name, table_name, events, url, secret, active, filter, select_fields, ordering, history, on_dead,
                                     batch_max_events, batch_max_wait_ms, batch_max_bytes, ordering_by)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18)`,
      [
        id,
        s.projectId,
        s.environment,
        s.schema,
        s.table,
        s.events ?? ['INSERT', 'UPDATE', 'DELETE'],
        s.url ?? 'https://127.0.0.1:1/hook',
        sealWebhookSecret(ctx.secrets, s.secret ?? 'test-secret-0123456789'),
        s.active ?? true,
        s.filter ? JSON.stringify(s.filter) : null,
        s.select ?? null,
        typeof s.ordering === 'object' ? 'group' : (s.ordering ?? 'none'),
        s.history ?? 'full',
        s.onDead ?? 'skip',
        s.batch?.maxEvents ?? 1,
        s.batch?.maxWaitMs ?? 100,
        s.batch?.maxBytes ?? 1024 * 1024,
        typeof s.ordering === 'object' ? s.ordering.by : null,
      ],
    );
    await watchTable(c, s.schema, s.table);
  });
  return id;
}

export async function setSubscriptionActive(ctx: Pick<Context, 'pool'>, id: string, active: boolean): Promise<void> {
  await ctx.pool.query('UPDATE walgate.webhooks SET active = $2, updated_at = now() WHERE id = $1', [id, active]);
}
