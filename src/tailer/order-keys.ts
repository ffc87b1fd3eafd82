import { createHash } from 'node:crypto';
import type { Queryable } from '../core/db/pool.js';
import type { Change } from './events.js';
import type { Row } from './match.js';

// Row ordering (a subscription's `ordering: "row"`): each delivery carries the order keys of its
// row, and the delivery engine sends the deliveries that share a key one at a time, in commit order
// (src/delivery/stream.ts in memory, src/delivery/store.ts claimDue in the retry queue).

/**
 * The primary-key columns of a relation, in key order; empty when it has none. Read from the
 * catalog rather than from the stream's Relation message: walgate sets REPLICA IDENTITY FULL on
 * every watched table, and pgoutput then flags every column as part of the key. The catalog is
 * read as it is now, not as of the change: a key dropped since makes the table's changes
 * unordered (the session warns), a key added since orders them.
 */
export async function primaryKeyOf(db: Queryable, relationOid: number): Promise<string[]> {
  const { rows } = await db.query<{ attname: string }>(
    `SELECT a.attname FROM pg_catalog.pg_index i
       JOIN pg_catalog.pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY (i.indkey)
      WHERE i.indrelid = $1 AND i.indisprimary
      ORDER BY array_position(i.indkey::int2[], a.attnum)`,
    [relationOid],
  );
  return rows.map((r) => r.attname);
}

/**
 * A row's order key: the table and its primary-key values (their to_jsonb fragments), as a JSON
 * array — so no two different tuples of values spell the same text, whatever quotes, commas or
 * separators the values hold — hashed, so that a key of any length fits the retry queue's index.
 * A hash collision could only make two rows wait for each other (more order, never less).
 */
export function orderKey(schema: string, table: string, row: Row, keyColumns: readonly number[]): string {
  const text = JSON.stringify([schema, table, ...keyColumns.map((i) => row.fragments[i] ?? 'null')]);
  return createHash('sha256').update(text).digest('base64url');
}

/**
 * The order keys of a change: its row's key (the deleted row's for DELETE), and for an UPDATE
 * that changed the primary key also the old key — such a change orders with the changes of the
 * row under its old key and under its new one. Null when the table has no primary key.
 */
export function changeOrderKeys(change: Change, keyColumns: readonly number[] | null): string[] | null {
  if (!keyColumns || keyColumns.length === 0) return null;
  const current = orderKey(change.schema, change.table, change.record, keyColumns);
  if (change.operation !== 'UPDATE' || !change.old) return [current];
  const old = orderKey(change.schema, change.table, change.old, keyColumns);
  return old === current ? [current] : [current, old];
}
