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
  /**
   * 'row': each delivery carries its row's order keys (order-keys.ts); 'group': its group's, the
   * values of the `orderingBy` columns. Saved views from before the field existed lack it: read
   * as 'none' (specOrdering).
   */
  ordering: 'none' | 'row' | 'group';
  /** The group's columns with 'group', in the order given; null otherwise. */
  orderingBy: string[] | null;
}

/**
 * A spec's ordering as stored (a WAL row, a saved view of any age): anything but a well-formed
 * group or 'row' is 'none' — an older saved spec lacks the fields, and a group without columns
 * could order nothing.
 */
export function specOrdering(ordering: unknown, by: unknown): Pick<SubscriptionSpec, 'ordering' | 'orderingBy'> {
  if (ordering === 'row') return { ordering: 'row', orderingBy: null };
  if (ordering === 'group' && Array.isArray(by) && by.length > 0 && by.every((c) => typeof c === 'string')) {
    return { ordering: 'group', orderingBy: by as string[] };
  }
  return { ordering: 'none', orderingBy: null };
}

/**
 * The subscriptions as of the WAL position being processed. It changes only through the
 * walgate.webhooks rows in the stream, so a subscription created, paused or deleted takes effect
 * exactly at its commit, in order with the data changes around it.
 */
export class SubscriptionView {
  readonly #byId = new Map<string, SubscriptionSpec>();
  readonly #byTable = new Map<string, SubscriptionSpec[]>();
  /** By project, environment and table: for tables that are not in the environment's schema (auth-events.ts). */
  readonly #byEnvironmentTable = new Map<string, SubscriptionSpec[]>();
  readonly #tableNames = new Set<string>();

  constructor(specs: SubscriptionSpec[] = []) {
    for (const s of specs) this.#byId.set(s.id, s);
    this.#reindex();
  }

  get size(): number {
    return this.#byId.size;
  }

  /** One subscription as of the position being processed (a backfill's READs go to it alone). */
  get(id: string): SubscriptionSpec | undefined {
    return this.#byId.get(id);
  }

  forTable(schema: string, table: string): readonly SubscriptionSpec[] {
    return this.#byTable.get(`${schema}\0${table}`) ?? [];
  }

  forEnvironmentTable(projectId: string, environment: string, table: string): readonly SubscriptionSpec[] {
    return this.#byEnvironmentTable.get(`${projectId}\0${environment}\0${table}`) ?? [];
  }

  /** Whether any subscription names a table of this name, in any schema. */
  watchesTableByName(table: string): boolean {
    return this.#tableNames.has(table);
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
    this.#byEnvironmentTable.clear();
    this.#tableNames.clear();
    const add = (index: Map<string, SubscriptionSpec[]>, key: string, s: SubscriptionSpec) => {
      const list = index.get(key);
      if (list) list.push(s);
      else index.set(key, [s]);
    };
    for (const s of this.#byId.values()) {
      add(this.#byTable, `${s.schema}\0${s.table}`, s);
      add(this.#byEnvironmentTable, `${s.projectId}\0${s.environment}\0${s.table}`, s);
      this.#tableNames.add(s.table);
    }
  }
}

/** Each field of a spec and its column in walgate.webhooks: the one mapping, for SQL reads and WAL rows alike. */
const SPEC_FIELDS = {
  id: 'id',
  projectId: 'project_id',
  environment: 'environment',
  schema: 'schema_name',
  table: 'table_name',
  events: 'events',
  active: 'active',
  filter: 'filter',
  select: 'select_fields',
  ordering: 'ordering',
  orderingBy: 'ordering_by',
} as const satisfies { [K in keyof SubscriptionSpec]-?: string };

const SPEC_COLUMNS = selectList<SubscriptionSpec>(SPEC_FIELDS);

/** A walgate.webhooks row as the WAL carries it: each column's value as JSON text ('null' when absent). */
export function specFromWalRow(json: (column: string) => string): SubscriptionSpec {
  const value = <K extends keyof SubscriptionSpec>(field: K) => JSON.parse(json(SPEC_FIELDS[field])) as SubscriptionSpec[K];
  return {
    id: value('id'),
    projectId: value('projectId'),
    environment: value('environment'),
    schema: value('schema'),
    table: value('table'),
    events: value('events') ?? [],
    active: value('active') === true,
    filter: value('filter'),
    select: value('select'),
    ...specOrdering(value('ordering'), value('orderingBy')),
  };
}

/** Today's subscriptions, straight from walgate.webhooks (used when the tailer's own view starts). */
export async function currentSubscriptions(db: Queryable): Promise<SubscriptionSpec[]> {
  const { rows } = await db.query<SubscriptionSpec>(`SELECT ${SPEC_COLUMNS} FROM walgate.webhooks`);
  return rows;
}

/**
 * The view as of a WAL position, from its saved versions (walgate.tailer_subscriptions): each
 * subscription's newest version from at or before the position, deleted ones left out.
 */
export async function loadSavedView(db: Queryable, at: string): Promise<SubscriptionSpec[]> {
  const { rows } = await db.query<{ spec: SubscriptionSpec | null }>(
    `SELECT DISTINCT ON (webhook_id) spec FROM walgate.tailer_subscriptions
      WHERE valid_from <= $1::pg_lsn ORDER BY webhook_id, valid_from DESC`,
    [at],
  );
  return rows.flatMap((r) => (r.spec ? [{ ...r.spec, ...specOrdering(r.spec.ordering, r.spec.orderingBy) }] : []));
}

/** Starts the saved view afresh at a position (a new slot, or state that was wiped). */
export async function replaceSavedView(db: Queryable, specs: SubscriptionSpec[], at: string): Promise<void> {
  await db.query('DELETE FROM walgate.tailer_subscriptions');
  await saveViewChanges(
    db,
    specs.map((spec) => ({ op: 'upsert', spec })),
    at,
  );
}

export type ViewChange = { op: 'upsert'; spec: SubscriptionSpec } | { op: 'delete'; id: string };

/** Saves a transaction's view changes as versions valid from its end position. */
export async function saveViewChanges(db: Queryable, changes: ViewChange[], validFrom: string): Promise<void> {
  if (changes.length === 0) return;
  // The last change of a subscription in the transaction is its version.
  const last = new Map<string, SubscriptionSpec | null>();
  for (const c of changes) last.set(c.op === 'upsert' ? c.spec.id : c.id, c.op === 'upsert' ? c.spec : null);
  await db.query(
    `INSERT INTO walgate.tailer_subscriptions (webhook_id, valid_from, spec)
     SELECT id, $3::pg_lsn, spec FROM unnest($1::text[], $2::jsonb[]) AS v(id, spec)
     ON CONFLICT (webhook_id, valid_from) DO UPDATE SET spec = EXCLUDED.spec`,
    [[...last.keys()], [...last.values()].map((spec) => (spec ? JSON.stringify(spec) : null)), validFrom],
  );
}

/**
 * Forgets the versions no position at or after `processed` can need (superseded ones, old
 * deletions). `processed` must be a position recorded in walgate.tailer_state: reading never
 * resumes before it.
 */
export async function pruneViewVersions(db: Queryable, processed: string): Promise<void> {
  await db.query(
    `DELETE FROM walgate.tailer_subscriptions t
      WHERE t.valid_from <= $1::pg_lsn
        AND (t.spec IS NULL OR EXISTS (SELECT 1 FROM walgate.tailer_subscriptions u
                                        WHERE u.webhook_id = t.webhook_id AND u.valid_from > t.valid_from AND u.valid_from <= $1::pg_lsn))`,
    [processed],
  );
}
