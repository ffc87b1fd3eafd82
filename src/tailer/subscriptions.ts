import { selectList } from '../core/db/columns.js';
import type { Queryable } from '../core/db/pool.js';

/** What the tailer needs of a webhook subscription to decide which changes it gets. */
export interface SubscriptionSpec {
  id: string;
  projectId: string;
  environment: string;
  schema: string;
  table: string;
  events: string[];
  active: boolean;
  filter: Record<string, unknown> | null;
  select: string[] | null;
}

/**
 * The subscriptions as of the WAL position being processed. It changes only through the
 * walgate.webhooks rows in the stream, so a subscription created, paused or deleted takes effect
 * exactly at its commit, in order with the data changes around it.
 */
export class SubscriptionView {
  readonly #byId = new Map<string, SubscriptionSpec>();
  readonly #byTable = new Map<string, SubscriptionSpec[]>();

  constructor(specs: SubscriptionSpec[] = []) {
    for (const s of specs) this.#byId.set(s.id, s);
    this.#reindex();
  }

  get size(): number {
    return this.#byId.size;
  }

  forTable(schema: string, table: string): readonly SubscriptionSpec[] {
    return this.#byTable.get(`${schema}\0${table}`) ?? [];
  }

  upsert(spec: SubscriptionSpec): void {
    this.#byId.set(spec.id, spec);
    this.#reindex();
  }

  remove(id: string): void {
    if (this.#byId.delete(id)) this.#reindex();
  }

  // Subscriptions change rarely; rebuilding the index keeps the hot path a single map lookup.
  #reindex(): void {
    this.#byTable.clear();
    for (const s of this.#byId.values()) {
      const key = `${s.schema}\0${s.table}`;
      const list = this.#byTable.get(key);
      if (list) list.push(s);
      else this.#byTable.set(key, [s]);
    }
  }
}

const SPEC_COLUMNS = selectList<SubscriptionSpec>({
  id: 'id',
  projectId: 'project_id',
  environment: 'environment',
  schema: 'schema_name',
  table: 'table_name',
  events: 'events',
  active: 'active',
  filter: 'filter',
  select: 'select_fields',
});

/** Today's subscriptions, straight from walgate.webhooks (used when the tailer's own view starts). */
export async function currentSubscriptions(db: Queryable): Promise<SubscriptionSpec[]> {
  const { rows } = await db.query<SubscriptionSpec>(`SELECT ${SPEC_COLUMNS} FROM walgate.webhooks`);
  return rows;
}

/** The view persisted with the tailer's position (walgate.tailer_subscriptions). */
export async function loadSavedView(db: Queryable): Promise<SubscriptionSpec[]> {
  const { rows } = await db.query<{ spec: SubscriptionSpec }>('SELECT spec FROM walgate.tailer_subscriptions');
  return rows.map((r) => r.spec);
}

export async function replaceSavedView(db: Queryable, specs: SubscriptionSpec[]): Promise<void> {
  await db.query('DELETE FROM walgate.tailer_subscriptions');
  await saveViewChanges(
    db,
    specs.map((spec) => ({ op: 'upsert', spec })),
  );
}

export type ViewChange = { op: 'upsert'; spec: SubscriptionSpec } | { op: 'delete'; id: string };

export async function saveViewChanges(db: Queryable, changes: ViewChange[]): Promise<void> {
  for (const c of changes) {
    if (c.op === 'upsert') {
      await db.query(
        `INSERT INTO walgate.tailer_subscriptions (webhook_id, spec) VALUES ($1, $2)
         ON CONFLICT (webhook_id) DO UPDATE SET spec = EXCLUDED.spec`,
        [c.spec.id, JSON.stringify(c.spec)],
      );
    } else {
      await db.query('DELETE FROM walgate.tailer_subscriptions WHERE webhook_id = $1', [c.id]);
    }
  }
}
