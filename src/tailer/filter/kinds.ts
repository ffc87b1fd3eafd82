import { renderBool, renderDate, renderJson, renderNumber, renderString, renderTimestamp, type Render } from '../values.js';

// How a filter compares a column's values, decided by the column's Postgres type (by the base
// type of a domain). The tailer knows a column by the renderer its type got (types.ts); the api,
// checking a filter against the catalog, by the base type's oid. Both go through the one table
// below, so what was accepted at create time is what the tailer evaluates.

/**
 * - `numeric`: int2/4/8, float4/8, numeric — exact decimal order (NaN above every number, as in Postgres);
 * - `timestamp`: timestamp and timestamptz — instants (a value without offset reads as UTC);
 * - `date`: days;
 * - `boolean`: equality only;
 * - `json`: json/jsonb — a `$path` into it, each value typed by its JSON type;
 * - `text`: text, varchar, char, name, uuid — Unicode code point order;
 * - `other`: anything else (enums, arrays, intervals, composites …) — equality of its JSON text.
 */
export type ValueKind = 'numeric' | 'timestamp' | 'timestamptz' | 'date' | 'boolean' | 'json' | 'text' | 'other';

const BY_BASE_TYPE = new Map<number, ValueKind>([
  [16, 'boolean'],
  [20, 'numeric'],
  [21, 'numeric'],
  [23, 'numeric'],
  [700, 'numeric'],
  [701, 'numeric'],
  [1700, 'numeric'],
  [114, 'json'],
  [3802, 'json'],
  [1082, 'date'],
  [1114, 'timestamp'],
  [1184, 'timestamptz'],
  [25, 'text'],
  [1043, 'text'],
  [1042, 'text'],
  [19, 'text'],
  [2950, 'text'],
]);

/** The kind of a base type (a domain's base type, not the domain). */
export function kindOfBaseType(oid: number): ValueKind {
  return BY_BASE_TYPE.get(oid) ?? 'other';
}

// A column's renderer says what the tailer can compare. Strings of unknown types (enums …) read
// as text, which equality on their JSON text agrees with; the api allows them equality only.
const BY_RENDER = new Map<Render, ValueKind>([
  [renderNumber, 'numeric'],
  [renderTimestamp, 'timestamp'],
  [renderDate, 'date'],
  [renderBool, 'boolean'],
  [renderJson, 'json'],
  [renderString, 'text'],
]);

/** The kind of a column in the tailer, from its renderer (arrays and composites: `other`). */
export function kindOfRender(render: Render): ValueKind {
  return BY_RENDER.get(render) ?? 'other';
}
