import { withTransaction, type Pool, type Queryable } from '../../core/db/pool.js';
import { qualified, quoteIdent } from '../../core/db/identifiers.js';
import { matchesFilter, type Row } from '../match.js';
import { rowIdentity } from '../order-keys.js';
import type { PageRow } from './window.js';

// Reading a backfill's table in keyset pages: ordered by the sort column (the primary key by
// default) and then the primary key, so every row has one place and a page starts strictly after
// the last row handed on. Values are rendered by Postgres's own to_jsonb, column by column, as
// the WAL decoder renders them (values.ts), so a READ looks like an INSERT of the same row.

/** A table as a backfill reads it. */
export interface BackfillTable {
  schema: string;
  table: string;
  /** Every column, in table order (what a WAL change of the table carries). */
  columns: string[];
  /** Primary-key columns, in key order: a row's identity. */
  key: string[];
  /** The keyset: the sort column (when not part of the key) and then the key. */
  sort: string[];
}

/** The table's columns and primary key; undefined when it does not exist. */
export async function describeBackfillTable(
  db: Queryable,
  schema: string,
  table: string,
  sortColumn: string | null,
): Promise<BackfillTable | undefined> {
  const { rows } = await db.query<{ columns: string[] | null; key: string[] | null }>(
    `SELECT (SELECT array_agg(a.attname::text ORDER BY a.attnum) FROM pg_catalog.pg_attribute a
              WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped) AS columns,
            (SELECT array_agg(a.attname::text ORDER BY array_position(i.indkey::int2[], a.attnum))
               FROM pg_catalog.pg_index i JOIN pg_catalog.pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY (i.indkey)
              WHERE i.indrelid = c.oid AND i.indisprimary) AS key
       FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = $1 AND c.relname = $2 AND c.relkind IN ('r', 'p')`,
    [schema, table],
  );
  const found = rows[0];
  if (!found?.columns) return undefined;
  const key = found.key ?? [];
  const sort = sortColumn && !key.includes(sortColumn) ? [sortColumn, ...key] : key;
  return { schema, table, columns: found.columns, key, sort };
}

/** The rows in the table when the backfill starts: the planner's estimate, counted when small or unknown. */
export async function estimateRows(db: Queryable, t: BackfillTable): Promise<number> {
  const { rows } = await db.query<{ n: string }>(
    `SELECT greatest(c.reltuples, 0)::bigint::text AS n FROM pg_catalog.pg_class c WHERE c.oid = $1::regclass`,
    [qualified(t.schema, t.table)],
  );
  const estimate = Number(rows[0]?.n ?? 0);
  if (estimate >= 100_000) return estimate;
  // A table never analysed reads 0 (or -1): counting up to the threshold costs little.
  const counted = await db.query<{ n: string }>(
    `SELECT count(*)::text AS n FROM (SELECT 1 FROM ${qualified(t.schema, t.table)} LIMIT 1000000) s`,
  );
  return Number(counted.rows[0]!.n);
}

/**
 * The sort values (text) of the table's last row now: a backfill reads up to it. Rows after it
 * are inserted (or, with a sort column such as `updated_at`, changed) after the backfill started,
 * and the stream delivers them anyway — without this bound a table growing at its end as fast as
 * pages are read would never be done. Undefined: the table is empty.
 */
export async function lastSortKey(db: Queryable, t: BackfillTable): Promise<string[] | undefined> {
  const cols = t.sort.map((c) => `t.${quoteIdent(c)}`);
  const { rows } = await db.query<{ k: string[] }>(
    `SELECT ARRAY[${cols.map((c) => `${c}::text`).join(', ')}] AS k FROM ${qualified(t.schema, t.table)} t
      WHERE ${cols.map((c) => `${c} IS NOT NULL`).join(' AND ')} ORDER BY ${cols.map((c) => `${c} DESC`).join(', ')} LIMIT 1`,
  );
  return rows[0]?.k;
}

export interface PageQuery {
  table: BackfillTable;
  /** The sort values of the last row handed on (text); null: from the start. */
  cursor: string[] | null;
  /** The sort values of the last row to read (lastSortKey when the backfill started). */
  until: string[];
  /** Only rows whose sort column is at least this (text, cast by Postgres to the column's type). */
  since: string | null;
  /** The backfill's own filter (equality on columns), besides the subscription's. */
  filter: Record<string, unknown> | null;
  maxRows: number;
  /** The page stops after the row that reaches this many bytes (one row at least). */
  maxBytes: number;
}

export interface Page {
  rows: PageRow[];
  /** Where the next page starts; null when nothing was read. */
  cursor: string[] | null;
  /** False once the table has no rows after this page. */
  more: boolean;
  /** Rows read (before the backfill's filter). */
  read: number;
}

/** The bytes the tailer holds for a row: its values as JSON. */
function weight(fragments: readonly (string | null)[]): number {
  let n = 0;
  for (const f of fragments) n += f === null ? 4 : Buffer.byteLength(f);
  return n;
}

/**
 * One page, through a cursor fetched a few rows at a time (as many as the rest of the byte budget
 * holds at the rows' average size so far, one at first): Postgres renders only the rows the page
 * takes, and the tailer holds at most maxBytes plus one row, whatever the table's rows weigh. A
 * query that summed sizes itself would render up to maxRows rows to keep four of 1 MB.
 */
export async function readPage(pool: Pool, q: PageQuery): Promise<Page> {
  const { table: t } = q;
  const params: unknown[] = [];
  const param = (v: unknown) => {
    params.push(v);
    return `$${params.length}`;
  };
  const sortCols = t.sort.map((c) => `t.${quoteIdent(c)}`);
  const where: string[] = [];
  if (q.since !== null) where.push(`t.${quoteIdent(t.sort[0]!)} >= ${param(q.since)}`);
  if (q.cursor) where.push(`(${sortCols.join(', ')}) > (${q.cursor.map((v) => param(v)).join(', ')})`);
  where.push(`(${sortCols.join(', ')}) <= (${q.until.map((v) => param(v)).join(', ')})`);
  const sql = `SELECT ARRAY[${t.columns.map((c) => `to_jsonb(t.${quoteIdent(c)})::text`).join(', ')}] AS f,
                      ARRAY[${sortCols.map((c) => `${c}::text`).join(', ')}] AS c
                 FROM ${qualified(t.schema, t.table)} t WHERE ${where.join(' AND ')}
                ORDER BY ${sortCols.join(', ')} LIMIT ${param(q.maxRows)}`;
  const rows: Array<{ f: string[]; c: string[] }> = [];
  let cut = false;
  // One cursor, one snapshot: taken after the low watermark committed, gone before the high one is written.
  await withTransaction(pool, async (client) => {
    await client.query(`DECLARE backfill_page NO SCROLL CURSOR FOR ${sql}`, params);
    let bytes = 0;
    let batch = 1;
    for (;;) {
      const got = (await client.query<{ f: string[]; c: string[] }>(`FETCH ${batch} FROM backfill_page`)).rows;
      for (const r of got) {
        rows.push(r);
        bytes += weight(r.f);
        if (bytes >= q.maxBytes) break;
      }
      if (bytes >= q.maxBytes) {
        cut = rows.length < q.maxRows;
        break;
      }
      if (got.length < batch) break;
      batch = Math.max(1, Math.min(256, Math.floor((q.maxBytes - bytes) / (bytes / rows.length))));
    }
  });
  const read = rows.length;
  const last = rows.at(-1);
  const indexOf = new Map(t.columns.map((c, i) => [c, i]));
  const keyPositions = t.key.map((c) => indexOf.get(c)!);
  const out: PageRow[] = [];
  for (const r of rows) {
    const row: Row = { names: t.columns, fragments: r.f, indexOf };
    if (!matchesFilter(q.filter, row)) continue;
    out.push({ identity: rowIdentity(t.schema, t.table, row, keyPositions), fragments: r.f });
  }
  // Cut by bytes, or a full page: there may be more.
  return { rows: out, cursor: last ? last.c : q.cursor, more: cut || read === q.maxRows, read };
}

/** Class 22 (data exception: a text that is no value of the column's type) or 42 (e.g. a type without an order): the request's fault, not a failure. */
export function isQueryProblem(err: unknown): boolean {
  const code = (err as { code?: unknown }).code;
  return typeof code === 'string' && (code.startsWith('22') || code.startsWith('42'));
}

/**
 * Whether pages can be read as asked: the keyset has an order, and `since` reads as a value of the
 * sort column (Postgres's own cast decides). Which field is at fault and why, or undefined.
 */
export async function probeKeyset(
  db: Queryable,
  t: BackfillTable,
  since: string | null,
): Promise<{ path: string; message: string } | undefined> {
  const cols = t.sort.map((c) => `t.${quoteIdent(c)}`).join(', ');
  try {
    await db.query(`SELECT 1 FROM ${qualified(t.schema, t.table)} t ORDER BY ${cols} LIMIT 0`);
  } catch (err) {
    if (isQueryProblem(err)) return { path: 'sortColumn', message: `cannot order by ${t.sort[0]}: ${(err as Error).message}` };
    throw err;
  }
  if (since === null) return undefined;
  try {
    await db.query(`SELECT 1 FROM ${qualified(t.schema, t.table)} t WHERE t.${quoteIdent(t.sort[0]!)} >= $1 LIMIT 0`, [since]);
    return undefined;
  } catch (err) {
    if (isQueryProblem(err)) return { path: 'since', message: `is not a value of ${t.sort[0]}: ${(err as Error).message}` };
    throw err;
  }
}
