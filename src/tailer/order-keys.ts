import { createHash } from 'node:crypto';
import type { Queryable } from '../core/db/pool.js';
import type { Change } from './events.js';
import type { Row } from './match.js';

// Row ordering (a subscription's `ordering: "row"`): each delivery carries the order keys of its
// row, and the delivery engine sends the deliveries that share a key one at a time, in commit order
// (src/delivery/stream.ts in memory, src/delivery/sql/queue.ts claimDue in the retry queue).
// Group ordering (`ordering: {by: [columns]}`) is the same engine with keys made of the group's
// values instead of the primary key's: the delivery plane never knows which kind a key is.

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
 * A group's identity (a subscription's `ordering: {by: [...]}`): the table, the group's column
 * names and their values (to_jsonb fragments) as a JSON array. The names are part of it, so a
 * group identity never equals a row identity (whose third element is a value, never an array),
 * and a subscription that changes its group columns starts new groups rather than joining the
 * old ones by accident. NULL is a value like any other here, as in GROUP BY: the rows whose
 * group is NULL form one group of their own (docs/webhooks.md, Ordering). Null when the row
 * lacks one of the columns (dropped since the subscription was saved): unordered, reported
 * through the subscription's `problems`.
 */
export function groupIdentity(schema: string, table: string, row: Row, columns: readonly string[]): string | null {
  const values: string[] = [];
  for (const column of columns) {
    const i = row.indexOf.get(column);
    if (i === undefined) return null;
    values.push(row.fragments[i] ?? 'null');
  }
  return JSON.stringify([schema, table, columns, ...values]);
}

/**
 * The group identities a change orders with: its row's group (the deleted row's for DELETE), and
 * for an UPDATE that moved the row to another group also the old one — it then orders after the
 * earlier changes of both groups and before the later ones of either, as a primary-key change
 * does for row ordering. Null when the table lacks a group column (the change goes unordered).
 */
export function changeGroups(change: Change, columns: readonly string[]): string[] | null {
  const current = groupIdentity(change.schema, change.table, change.record, columns);
  if (current === null) return null;
  if (change.operation !== 'UPDATE' || !change.old) return [current];
  const old = groupIdentity(change.schema, change.table, change.old, columns);
  return old === null || old === current ? [current] : [current, old];
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
