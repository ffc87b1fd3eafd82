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
 * A row's identity: the table and its primary-key values (their to_jsonb fragments) as a JSON
 * array — so no two different tuples of values spell the same text, whatever quotes, commas or
 * separators the values hold.
 */
export function rowIdentity(schema: string, table: string, row: Row, keyColumns: readonly number[]): string {
  return JSON.stringify([schema, table, ...keyColumns.map((i) => row.fragments[i] ?? 'null')]);
}

/**
 * The row identities a change orders with: its row's (the deleted row's for DELETE), and for an
 * UPDATE that changed the primary key also the old one — such a change orders with the changes of
 * the row under its old key and under its new one. Null when the table has no primary key.
 */
export function changeRows(change: Change, keyColumns: readonly number[] | null): string[] | null {
  if (!keyColumns || keyColumns.length === 0) return null;
  const current = rowIdentity(change.schema, change.table, change.record, keyColumns);
  if (change.operation !== 'UPDATE' || !change.old) return [current];
  const old = rowIdentity(change.schema, change.table, change.old, keyColumns);
  return old === current ? [current] : [current, old];
}

/**
 * A subscription's order key for a row: its id and the row's identity, hashed — so a key of any
 * length fits the retry queue's index, and keys of different subscriptions never meet (the
 * queue's checks look a key up alone, sql/009). A hash collision could only make two rows wait for
 * each other (more order, never less).
 */
export function orderKey(webhookId: string, row: string): string {
  return createHash('sha256').update(webhookId).update('\0').update(row).digest('base64url');
}
