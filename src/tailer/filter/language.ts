import { parseDecimal, parseTime } from './compare.js';
import type { ValueKind } from './kinds.js';

// The filter language (docs/filters.md): a JSON document in the style of MongoDB and Convoy.
// `{"status": "paid"}` is equality on the row, as it always was; besides it, operators on a
// column (`{"total": {"$gt": 100}}`), on a path into a json column, on the old row (`$old`) and on
// what an UPDATE changed. This file reads a document into a tree once — refusing, with the place,
// anything it cannot mean — and compile.ts turns the tree into the predicate the tailer runs.
// Everything is bounded (depth, clauses, list and string sizes), and no operator takes a pattern:
// evaluating a filter costs at most a scan of the values it names.

export type Scalar = string | number | boolean | null;

export const COMPARISONS = ['$eq', '$ne', '$lt', '$lte', '$gt', '$gte'] as const;
export const COLUMN_OPERATORS = [...COMPARISONS, '$in', '$nin', '$isNull', '$startsWith', '$changedFrom', '$changedTo'] as const;
export const DOCUMENT_OPERATORS = ['$and', '$or', '$not', '$old', '$changed'] as const;

export type ColumnOperator = (typeof COLUMN_OPERATORS)[number];

export type FilterNode =
  | { type: 'and'; of: FilterNode[] }
  | { type: 'or'; of: FilterNode[] }
  | { type: 'not'; of: FilterNode }
  | { type: 'old'; of: FilterNode }
  | { type: 'changed'; columns: string[] }
  | { type: 'clause'; column: string; path: Array<string | number> | null; op: ColumnOperator; value: Scalar | Scalar[] };

export const FILTER_LIMITS = {
  /** Nesting of `$and`, `$or`, `$not` and `$old`. */
  depth: 8,
  /** Operator clauses (a bare value is one `$eq`) and `$changed` lists, in the whole document. */
  clauses: 64,
  /** Entries of `$and`, `$or`, `$in`, `$nin`, `$changed`; keys of one object. */
  list: 100,
  /** Characters of a string value or `$path` key. */
  string: 1024,
  /** Steps of a `$path`. */
  path: 16,
} as const;

export interface FilterIssue {
  /** Where, from the filter's root: keys and array indexes. */
  path: Array<string | number>;
  message: string;
}

/** What a document holds that the api checks against the table: each column's kind (checked when given). */
export type ColumnKinds = ReadonlyMap<string, ValueKind>;

const MAX_ISSUES = 20;
const COLUMN_OPERATOR_SET = new Set<string>(COLUMN_OPERATORS);
const ORDERED: ReadonlySet<string> = new Set(['$lt', '$lte', '$gt', '$gte']);
const CHANGE_OPERATORS: ReadonlySet<string> = new Set(['$changedFrom', '$changedTo']);

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const isScalar = (v: unknown): v is Scalar => v === null || ['string', 'number', 'boolean'].includes(typeof v);
const list = (names: readonly string[]) => names.join(', ');

/** A value's kind for checks: a column's, or `path` for a value inside a json column (any JSON scalar). */
type CheckKind = ValueKind | 'path' | undefined;

class Reader {
  readonly issues: FilterIssue[] = [];
  clauses = 0;

  constructor(private readonly columns: ColumnKinds | undefined) {}

  refuse(path: Array<string | number>, message: string): void {
    if (this.issues.length < MAX_ISSUES) this.issues.push({ path, message });
  }

  count(path: Array<string | number>): void {
    if (++this.clauses === FILTER_LIMITS.clauses + 1) this.refuse(path, `the filter has more than ${FILTER_LIMITS.clauses} clauses`);
  }

  document(value: unknown, path: Array<string | number>, depth: number, inOld: boolean): FilterNode {
    const of: FilterNode[] = [];
    if (!isObject(value)) {
      this.refuse(path, 'must be an object of column conditions and operators ($and, $or, $not, $old, $changed)');
      return { type: 'and', of };
    }
    const entries = Object.entries(value);
    if (entries.length > FILTER_LIMITS.list) {
      this.refuse(path, `must have at most ${FILTER_LIMITS.list} keys`);
      return { type: 'and', of };
    }
    for (const [key, v] of entries) {
      const at = [...path, key];
      if (!key.startsWith('$')) {
        of.push(...this.column(key, v, at, inOld));
        continue;
      }
      if ((key === '$old' || key === '$changed') && inOld) {
        this.refuse(at, `is about the change, not a row: not allowed inside $old`);
        continue;
      }
      if (key === '$and' || key === '$or' || key === '$not' || key === '$old') {
        if (depth >= FILTER_LIMITS.depth) {
          this.refuse(at, `is nested more than ${FILTER_LIMITS.depth} levels deep`);
          continue;
        }
        if (key === '$not' || key === '$old') {
          const inner = this.document(v, at, depth + 1, inOld || key === '$old');
          of.push(key === '$not' ? { type: 'not', of: inner } : { type: 'old', of: inner });
          continue;
        }
        if (!Array.isArray(v) || v.length === 0 || v.length > FILTER_LIMITS.list) {
          this.refuse(at, `must be a list of 1 to ${FILTER_LIMITS.list} filters`);
          continue;
        }
        const parts = v.map((d, i) => this.document(d, [...at, i], depth + 1, inOld));
        of.push(key === '$and' ? { type: 'and', of: parts } : { type: 'or', of: parts });
        continue;
      }
      if (key === '$changed') {
        this.count(at);
        if (!Array.isArray(v) || v.length === 0 || v.length > FILTER_LIMITS.list || !v.every((c) => typeof c === 'string')) {
          this.refuse(at, `must be a list of 1 to ${FILTER_LIMITS.list} column names`);
          continue;
        }
        v.forEach((c: string, i) => this.known(c, [...at, i]));
        of.push({ type: 'changed', columns: v as string[] });
        continue;
      }
      this.refuse(at, `is not an operator here: a key is a column name or one of ${list(DOCUMENT_OPERATORS)}`);
    }
    return of.length === 1 ? of[0]! : { type: 'and', of };
  }

  /** Whether the table has the column (true when the table is not known). */
  known(column: string, at: Array<string | number>): boolean {
    if (!this.columns || this.columns.has(column)) return true;
    this.refuse(at, 'is not a column of the table');
    return false;
  }

  column(column: string, condition: unknown, at: Array<string | number>, inOld: boolean): FilterNode[] {
    const kind: CheckKind = this.known(column, at) ? this.columns?.get(column) : undefined;
    if (isScalar(condition)) {
      this.count(at);
      this.value(condition, kind, column, '$eq', at);
      return [{ type: 'clause', column, path: null, op: '$eq', value: condition }];
    }
    if (!isObject(condition)) {
      this.refuse(at, 'must be a value (equality) or an object of operators such as {"$in": [...]}');
      return [];
    }
    const entries = Object.entries(condition);
    let path: Array<string | number> | null = null;
    let valueKind: CheckKind = kind;
    if (Object.hasOwn(condition, '$path')) {
      path = this.path(condition.$path, [...at, '$path']);
      if (kind !== undefined && kind !== 'json')
        this.refuse([...at, '$path'], `only json and jsonb columns have paths (${column} is ${kind})`);
      valueKind = 'path';
    }
    const out: FilterNode[] = [];
    if (entries.every(([op]) => op === '$path')) this.refuse(at, `must name an operator: one of ${list(COLUMN_OPERATORS)}`);
    for (const [op, value] of entries) {
      if (op === '$path') continue;
      const opAt = [...at, op];
      if (!COLUMN_OPERATOR_SET.has(op)) {
        this.refuse(
          opAt,
          op.startsWith('$')
            ? `is not an operator: one of ${list(['$path', ...COLUMN_OPERATORS])}`
            : 'column conditions do not nest: use $path to reach inside a json column',
        );
        continue;
      }
      this.count(opAt);
      if (CHANGE_OPERATORS.has(op) && inOld) {
        this.refuse(opAt, 'is about the change, not a row: not allowed inside $old');
        continue;
      }
      if (op === '$in' || op === '$nin') {
        if (!Array.isArray(value) || value.length === 0 || value.length > FILTER_LIMITS.list) {
          this.refuse(opAt, `must be a list of 1 to ${FILTER_LIMITS.list} values`);
          continue;
        }
        value.forEach((v, i) => this.value(v, valueKind, column, op, [...opAt, i]));
        out.push({ type: 'clause', column, path, op, value: value as Scalar[] });
        continue;
      }
      if (op === '$isNull') {
        if (typeof value !== 'boolean') this.refuse(opAt, 'must be true or false');
        else out.push({ type: 'clause', column, path, op, value });
        continue;
      }
      if (this.value(value, valueKind, column, op as ColumnOperator, opAt))
        out.push({ type: 'clause', column, path, op: op as ColumnOperator, value: value as Scalar });
    }
    return out;
  }

  path(value: unknown, at: Array<string | number>): Array<string | number> | null {
    const step = (s: unknown) => (typeof s === 'string' && s.length <= 256) || (typeof s === 'number' && Number.isSafeInteger(s) && s >= 0);
    if (!Array.isArray(value) || value.length > FILTER_LIMITS.path || !value.every(step)) {
      this.refuse(
        at,
        `must be a list of at most ${FILTER_LIMITS.path} keys (strings of at most 256 characters) and array indexes (whole numbers ≥ 0)`,
      );
      return null;
    }
    return value as Array<string | number>;
  }

  /** Checks one operand against the operator and the column's kind; false (and an issue) when refused. */
  value(value: unknown, kind: CheckKind, column: string, op: ColumnOperator, at: Array<string | number>): boolean {
    const refuse = (message: string) => (this.refuse(at, message), false);
    if (!isScalar(value)) return refuse('must be a string, number, boolean or null');
    // JSON's 1e400 parses as Infinity, which no column holds and which would be saved as null.
    if (typeof value === 'number' && !Number.isFinite(value)) return refuse('must be a finite number');
    if (typeof value === 'string' && value.length > FILTER_LIMITS.string)
      return refuse(`must be at most ${FILTER_LIMITS.string} characters`);
    if (ORDERED.has(op)) {
      if (value === null) return refuse('must not be null: use $isNull');
      if (typeof value === 'boolean') return refuse('booleans have no order: use $eq');
      if (kind === 'boolean' || kind === 'json' || kind === 'other')
        return refuse(`${column} (${kind}) has no order: use $eq, $ne, $in or $nin`);
    }
    if (op === '$startsWith') {
      if (typeof value !== 'string') return refuse('must be a string');
      if (kind !== undefined && kind !== 'text' && kind !== 'path') return refuse(`${column} is ${kind}, not text`);
      return true;
    }
    if (value === null || kind === undefined || kind === 'path' || kind === 'json') return true;
    switch (kind) {
      case 'numeric':
        if (typeof value === 'number' || (typeof value === 'string' && value.length <= 200 && parseDecimal(value))) return true;
        return refuse(`must be a number, or a decimal as a string ("12.50", to keep every digit): ${column} is numeric`);
      case 'boolean':
        return typeof value === 'boolean' || refuse(`must be true or false: ${column} is boolean`);
      case 'text':
      case 'other':
        return typeof value === 'string' || refuse(`must be a string: ${column} is ${kind === 'text' ? 'text' : 'compared by its text'}`);
      case 'date': {
        const t = typeof value === 'string' ? parseTime(value) : undefined;
        return (t && (t.day !== undefined || !Number.isFinite(t.instant.ms))) || refuse(`must be a date (YYYY-MM-DD): ${column} is a date`);
      }
      case 'timestamp': {
        const t = typeof value === 'string' ? parseTime(value) : undefined;
        if (t && (!t.hasOffset || /(Z|[+-]00(:?00)?)$/.test(value as string))) return true;
        return refuse(`must be an ISO 8601 timestamp without a time zone offset: ${column} is a timestamp without time zone`);
      }
      case 'timestamptz': {
        const t = typeof value === 'string' ? parseTime(value) : undefined;
        if (t && (t.hasOffset || !Number.isFinite(t.instant.ms))) return true;
        return refuse(`must be an ISO 8601 timestamp with an offset (Z or ±hh:mm): ${column} is a timestamp with time zone`);
      }
    }
  }
}

/**
 * Reads a filter document into its tree. With `columns` (the api, at create and update), every
 * column must exist and every value fit the column's type; without (the tailer, on saved
 * filters), the tree is read as it is. An empty document matches every change.
 */
export function parseFilter(document: unknown, columns?: ColumnKinds): { node: FilterNode; issues: FilterIssue[] } {
  const reader = new Reader(columns);
  const node = reader.document(document, [], 0, false);
  return { node, issues: reader.issues };
}

/** Every column a filter names (conditions, `$old`, `$changed`): what must not vanish from the table. */
export function filterColumns(document: unknown): string[] {
  const found = new Set<string>();
  const walk = (n: FilterNode) => {
    if (n.type === 'clause') found.add(n.column);
    else if (n.type === 'changed') n.columns.forEach((c) => found.add(c));
    else if (n.type === 'and' || n.type === 'or') n.of.forEach(walk);
    else walk(n.of);
  };
  walk(parseFilter(document ?? {}).node);
  return [...found];
}
