import { PgCode, pgCode, type Queryable } from '../core/db/pool.js';
import { capturedRelation, filterColumns, isFeed, MESSAGES_TABLE } from '../tailer/capture/index.js';
import { missingGroupColumns } from './ordering.js';
import type { WebhookRow } from './store.js';

// What a subscription cannot follow any more, read from the catalog when it is shown: its table
// gone, a `filter`, `select` or `ordering.by` column dropped, its table's replica identity no
// longer FULL. Reported, never silently wrong: a filter on a dropped column matches nothing, a
// select on one narrows the payload, a group missing a column orders nothing (its changes go
// unordered, tailer/order-keys.ts), and without FULL the old images are incomplete.
// A destination subscription whose broker has nowhere to put its messages is reported too.

export type ProblemCode =
  | 'TABLE_MISSING'
  | 'FILTER_COLUMN_MISSING'
  | 'SELECT_COLUMN_MISSING'
  | 'ORDERING_COLUMN_MISSING'
  | 'REPLICA_IDENTITY_CHANGED'
  | 'DESTINATION_TARGET_MISSING';

export interface Problem {
  code: ProblemCode;
  message: string;
  /** When it was first seen (ISO 8601); kept while the problem lasts. */
  since: string;
}

interface TableFacts {
  columns: string[];
  /** Tables (the table, or partitions of it) whose replica identity is not FULL. */
  notFull: string[];
  /** In walgate's publication (a table created again while walgate could not follow is not). */
  published: boolean;
}

async function tableFacts(db: Queryable, schema: string, table: string): Promise<TableFacts | undefined> {
  const { rows } = await db.query<{ columns: string[]; not_full: string[]; published: boolean }>(
    `SELECT ARRAY(SELECT a.attname::text FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum) AS columns,
            ARRAY(SELECT p.relid::regclass::text FROM (SELECT c.oid AS relid UNION SELECT relid FROM pg_partition_tree(c.oid)) p JOIN pg_class pc ON pc.oid = p.relid
                   WHERE pc.relreplident <> 'f' AND pc.relkind IN ('r', 'p')) AS not_full,
            EXISTS (SELECT 1 FROM pg_publication_rel r JOIN pg_publication p ON p.oid = r.prpubid WHERE p.pubname = 'walgate' AND r.prrelid = c.oid) AS published
       FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = $1 AND c.relname = $2 AND c.relkind IN ('r', 'p')`,
    [schema, table],
  );
  return rows[0] ? { columns: rows[0].columns, notFull: rows[0].not_full, published: rows[0].published } : undefined;
}

function currentProblems(w: WebhookRow, facts: TableFacts | undefined): Array<Omit<Problem, 'since'>> {
  if (!facts) {
    return [
      {
        code: 'TABLE_MISSING',
        message: `${w.table} does not exist: nothing is captured until a table of that name is created again`,
      },
    ];
  }
  const known = new Set(facts.columns);
  const out: Array<Omit<Problem, 'since'>> = [];
  if (!facts.published) {
    out.push({
      code: 'TABLE_MISSING',
      message: `${w.table} was created again and is not captured yet: updating the subscription captures it`,
    });
  }
  const filterMissing = filterColumns(w.filter).filter((c) => !known.has(c));
  if (filterMissing.length > 0) {
    out.push({
      code: 'FILTER_COLUMN_MISSING',
      message: `the filter names columns the table no longer has (${filterMissing.join(', ')}): every condition on them is false`,
    });
  }
  const selectMissing = (w.select ?? []).filter((c) => !known.has(c));
  if (selectMissing.length > 0) {
    out.push({
      code: 'SELECT_COLUMN_MISSING',
      message: `select names columns the table no longer has (${selectMissing.join(', ')}): payloads lack them`,
    });
  }
  const groupMissing = missingGroupColumns(w, facts.columns);
  if (groupMissing.length > 0) {
    out.push({
      code: 'ORDERING_COLUMN_MISSING',
      message: `ordering.by names columns the table no longer has (${groupMissing.join(', ')}): its changes are delivered unordered`,
    });
  }
  if (facts.notFull.length > 0) {
    out.push({
      code: 'REPLICA_IDENTITY_CHANGED',
      message: `REPLICA IDENTITY is not FULL on ${facts.notFull.join(', ')}: old rows are incomplete; updating the subscription sets it again`,
    });
  }
  return out;
}

/** A broker's answer that no retry will change until someone creates the stream, exchange or binding. */
const TARGET_MISSING = /^(NATS: no JetStream stream|RabbitMQ: no exchange|RabbitMQ: no queue is bound)/;

/**
 * A destination subscription whose broker has nowhere to put its messages (docs/destinations.md):
 * while its target keeps failing (its breaker counts failures) and the newest failure says so.
 * Cleared by the first success, which resets the count.
 */
async function destinationProblems(db: Queryable, w: WebhookRow): Promise<Array<Omit<Problem, 'since'>>> {
  if (!w.destinationId) return [];
  const { rows } = await db.query<{ last_error: string | null }>(
    `SELECT (SELECT d.last_error FROM walgate.deliveries d WHERE d.webhook_id = $1 AND d.last_error IS NOT NULL
              ORDER BY d.created_at DESC, d.id DESC LIMIT 1) AS last_error
       FROM walgate.endpoint_breakers b
      WHERE b.project_id = $2 AND b.environment = $3 AND b.url = $4 AND b.consecutive_failures > 0`,
    [w.id, w.projectId, w.environment, w.url],
  );
  const error = rows[0]?.last_error;
  if (!error || !TARGET_MISSING.test(error)) return [];
  return [{ code: 'DESTINATION_TARGET_MISSING', message: `${error}: every message fails until it exists` }];
}

/**
 * The subscriptions' problems as of now. Each is remembered with the time it was first seen
 * (walgate.webhook_problems), and forgotten once it is gone.
 */
export async function webhookProblems(db: Queryable, hooks: WebhookRow[], now: Date): Promise<Map<string, Problem[]>> {
  const facts = new Map<string, Promise<TableFacts | undefined>>();
  const out = new Map<string, Problem[]>();
  for (const w of hooks) {
    // Outbox messages are no table: nothing of theirs can drift (their columns are fixed).
    if (w.table === MESSAGES_TABLE) {
      out.set(w.id, await remember(db, w.id, await destinationProblems(db, w), now));
      continue;
    }
    const { schema, table } = capturedRelation(w.schemaName, w.table);
    const key = `${schema}\0${table}`;
    if (!facts.has(key)) facts.set(key, tableFacts(db, schema, table));
    const known = await facts.get(key);
    // A feed's table is walgate's own and only ever inserted into: no old rows to lose.
    const found = currentProblems(w, known && isFeed(w.table) ? { ...known, notFull: [] } : known);
    found.push(...(await destinationProblems(db, w)));
    out.set(w.id, await remember(db, w.id, found, now));
  }
  return out;
}

/** Keeps each problem's first-seen time; forgets those gone. */
async function remember(db: Queryable, webhookId: string, found: Array<Omit<Problem, 'since'>>, now: Date): Promise<Problem[]> {
  try {
    const { rows } = await db.query<{ code: ProblemCode; message: string; since: Date }>(
      `WITH gone AS (DELETE FROM walgate.webhook_problems WHERE webhook_id = $1 AND NOT (code = ANY($2::text[]))),
            seen AS (INSERT INTO walgate.webhook_problems (webhook_id, code, message, since)
                     SELECT $1, code, message, $4 FROM unnest($2::text[], $3::text[]) AS p(code, message)
                     ON CONFLICT (webhook_id, code) DO UPDATE SET message = EXCLUDED.message
                     RETURNING code, message, since)
       SELECT code, message, since FROM seen ORDER BY code`,
      [webhookId, found.map((p) => p.code), found.map((p) => p.message), now],
    );
    return rows.map((r) => ({ code: r.code, message: r.message, since: r.since.toISOString() }));
  } catch (err) {
    // Deleted meanwhile (a list read just before), or two readers of one subscription crossing:
    // what was found still holds; only its first-seen time is not kept this once.
    if (pgCode(err) !== PgCode.foreignKeyViolation && pgCode(err) !== PgCode.deadlockDetected) throw err;
    return found.map((p) => ({ ...p, since: now.toISOString() }));
  }
}
