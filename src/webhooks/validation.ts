import type { Queryable } from '../core/db/pool.js';
import { capturedRelation, kindOfBaseType, messageColumns, parseFilter, type ValueKind } from '../tailer/capture/index.js';
import type { Violation } from '../core/errors.js';
import type { Environment } from '../projects/environments.js';
import { groupViolations, type Ordering } from './ordering.js';
import { checkHost, systemLookup, type HostLookup } from '../core/net/address-policy.js';

export interface TableColumn {
  name: string;
  /** How a filter compares its values (by its base type: a domain is its base type). */
  kind: ValueKind;
}

/** The columns of a table in the schema with their kinds, or undefined when there is no such table. */
export async function tableColumns(db: Queryable, envSchema: string, envTable: string): Promise<TableColumn[] | undefined> {
  // `_messages` is always there, whatever the schema holds (a real table of that name is not watched).
  const virtual = messageColumns(envTable);
  if (virtual) return virtual.map((c) => ({ name: c.name, kind: c.type === 'jsonb' ? 'json' : 'text' }));
  const { schema, table } = capturedRelation(envSchema, envTable);
  // A domain's base type may itself be a domain: followed down (bounded) to the type that renders.
  const { rows } = await db.query<{ attname: string | null; base: number | null }>(
    `WITH RECURSIVE cols AS (
       SELECT a.attnum, a.attname, a.atttypid AS oid, 0 AS depth
         FROM pg_catalog.pg_class c
         JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
         LEFT JOIN pg_catalog.pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
        WHERE n.nspname = $1 AND c.relname = $2 AND c.relkind IN ('r', 'p')
       UNION ALL
       SELECT cols.attnum, cols.attname, t.typbasetype, cols.depth + 1
         FROM cols JOIN pg_catalog.pg_type t ON t.oid = cols.oid
        WHERE t.typtype = 'd' AND cols.depth < 32)
     SELECT cols.attname, cols.oid::int AS base FROM cols
       LEFT JOIN pg_catalog.pg_type t ON t.oid = cols.oid
      WHERE cols.attname IS NULL OR t.typtype IS DISTINCT FROM 'd'
      ORDER BY cols.attnum`,
    [schema, table],
  );
  if (rows.length === 0) return undefined;
  return rows.flatMap((r) => (r.attname === null ? [] : [{ name: r.attname, kind: kindOfBaseType(r.base ?? 0) }]));
}

/**
 * The primary-key columns of a table, in key order; empty when it has none. Row ordering needs
 * them: a row's changes are ordered by its key (src/tailer/order-keys.ts).
 */
export async function primaryKeyColumns(db: Queryable, envSchema: string, envTable: string): Promise<string[]> {
  if (messageColumns(envTable)) return []; // messages have no key to order by
  const { schema, table } = capturedRelation(envSchema, envTable);
  const { rows } = await db.query<{ attname: string }>(
    `SELECT a.attname
       FROM pg_catalog.pg_class c
       JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
       JOIN pg_catalog.pg_index i ON i.indrelid = c.oid AND i.indisprimary
       JOIN pg_catalog.pg_attribute a ON a.attrelid = c.oid AND a.attnum = ANY (i.indkey)
      WHERE n.nspname = $1 AND c.relname = $2
      ORDER BY array_position(i.indkey::int2[], a.attnum)`,
    [schema, table],
  );
  return rows.map((r) => r.attname);
}

export interface TableInfo {
  name: string;
  columns: Array<{ name: string; type: string }>;
}

/** The tables (not views) of a schema with their columns in order, by table name. */
export async function schemaTables(db: Queryable, schema: string): Promise<TableInfo[]> {
  const { rows } = await db.query<{ name: string; columns: Array<{ name: string; type: string }> }>(
    `SELECT c.relname AS name,
            coalesce(json_agg(json_build_object('name', a.attname, 'type', format_type(a.atttypid, a.atttypmod)) ORDER BY a.attnum)
                     FILTER (WHERE a.attnum IS NOT NULL), '[]') AS columns
       FROM pg_catalog.pg_class c
       JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
       LEFT JOIN pg_catalog.pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
      WHERE n.nspname = $1 AND c.relkind IN ('r', 'p') AND NOT c.relispartition
      GROUP BY c.relname ORDER BY c.relname`,
    [schema],
  );
  return rows;
}

/**
 * The subscriber URL: https only, no credentials in it, and (unless private networks are
 * allowed) a host whose every address is public. The delivery connector checks again, on the
 * address it really connects to; this check only gives an early, clear answer.
 */
export async function urlViolations(raw: string, allowPrivate: boolean, lookup: HostLookup = systemLookup): Promise<Violation[]> {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return [{ path: 'url', message: 'must be an absolute URL' }];
  }
  if (url.protocol !== 'https:') return [{ path: 'url', message: 'must be an https: URL' }];
  if (url.username || url.password) return [{ path: 'url', message: 'must not contain credentials' }];
  try {
    const check = await checkHost(url.hostname, allowPrivate, lookup);
    const refused = check.addresses.find((a) => a.reason);
    if (refused) {
      // Not the address itself: what an internal name resolves to is not the caller's to learn.
      return [
        { path: 'url', message: `must not point to a ${refused.reason} address; set WEBHOOK_ALLOW_PRIVATE_NETWORKS=true to allow it` },
      ];
    }
    if (!check.allowed) return [{ path: 'url', message: `host ${url.hostname} has no address` }];
  } catch {
    return [{ path: 'url', message: `host ${url.hostname} does not resolve` }];
  }
  return [];
}

/**
 * What the filter and select name, against the table: every column there, every filter value of
 * the column's type (the filter's shape was checked with the body, webhooks/schemas.ts).
 */
export function columnViolations(
  columns: TableColumn[],
  filter: Record<string, unknown> | null | undefined,
  select: string[] | null | undefined,
): Violation[] {
  const known = new Set(columns.map((c) => c.name));
  const violations: Violation[] = [];
  if (filter != null) {
    const { issues } = parseFilter(filter, new Map(columns.map((c) => [c.name, c.kind])));
    violations.push(...issues.map((i) => ({ path: ['filter', ...i.path].join('.'), message: i.message })));
  }
  (select ?? []).forEach((column, i) => {
    if (!known.has(column)) violations.push({ path: `select.${i}`, message: `${JSON.stringify(column)} is not a column of the table` });
  });
  return violations;
}

/** What validation needs to know of a create or update body (the update's merged with the row). */
export interface BodyFacts {
  projectId?: string;
  environment?: string;
  table: string;
  filter?: Record<string, unknown> | null;
  select?: string[] | null;
  /** Set when the body asks for row ordering (or moves a row-ordered subscription to another table): the table needs a primary key. */
  rowOrdered?: boolean;
  /** The ordering it will have: a group's columns must be columns of the table. */
  ordering?: Ordering;
}

/** The header echoes, the table and its columns — read on `db` (in a transaction: under its locks). */
export async function bodyViolations(db: Queryable, env: Environment, body: BodyFacts): Promise<Violation[]> {
  const violations: Violation[] = [];
  if (body.projectId !== undefined && body.projectId !== env.projectId) {
    violations.push({ path: 'projectId', message: `must equal the X-Project-ID header (${env.projectId})` });
  }
  if (body.environment !== undefined && body.environment !== env.name) {
    violations.push({ path: 'environment', message: `must equal the environment header (${env.name})` });
  }
  const columns = await tableColumns(db, env.schemaName, body.table);
  if (!columns) violations.push({ path: 'table', message: `no table ${JSON.stringify(body.table)} in schema ${env.schemaName}` });
  else {
    violations.push(...columnViolations(columns, body.filter, body.select), ...groupViolations(body.ordering ?? 'none', columns));
    if (body.rowOrdered && (await primaryKeyColumns(db, env.schemaName, body.table)).length === 0) {
      violations.push({
        path: 'ordering',
        message: `"row" orders a row's changes by its primary key, and table ${JSON.stringify(body.table)} has no primary key`,
      });
    }
  }
  return violations;
}
