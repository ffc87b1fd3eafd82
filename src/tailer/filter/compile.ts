import type { Row } from '../match.js';
import {
  compareDecimal,
  compareInstant,
  compareText,
  decimalOfNumber,
  parseDecimal,
  parseTime,
  stringOfFragment,
  type Decimal,
  type Instant,
} from './compare.js';
import { jsonAt } from './json-path.js';
import type { ValueKind } from './kinds.js';
import { parseFilter, type FilterNode, type Scalar } from './language.js';

// A filter tree (language.ts) as a predicate over a change, built once per subscription. Values
// are compared by what the column is (kinds.ts): a row's value is read from its JSON fragment as
// an exact decimal, an instant, a day, a boolean or a string, and meets the filter's value read
// the same way. Semantics (docs/filters.md):
// - null is a value: `$eq: null` and `$isNull: true` take it, `$ne: x` takes it (it is not x),
//   ordering operators and `$startsWith` never do;
// - a value of another type than the column's (after a column changed type) equals nothing;
// - a clause on a column the row lacks (dropped since) is false — the subscription shows the
//   problem (webhooks/problems.ts);
// - `$old` is false without an old row (INSERT, READ); `$changed`, `$changedFrom`, `$changedTo`
//   are true only for an UPDATE.

/** What a filter looks at: the change's kind, its row (the deleted row for DELETE) and the row before. */
export interface FilterInput {
  operation: string;
  record: Row;
  old: Row | null;
}

export type CompiledFilter = (change: FilterInput) => boolean;

/** A row value read for comparison. `jnum`: a number inside json, which meets numbers only. */
type Operand =
  | { t: 'null' }
  | { t: 'num' | 'jnum'; d: Decimal }
  | { t: 'time'; i: Instant }
  | { t: 'day'; n: number }
  | { t: 'bool'; b: boolean }
  | { t: 'text'; s: string }
  | { t: 'raw'; s: string };

const NULL: Operand = { t: 'null' };
const TRUE: Operand = { t: 'bool', b: true };
const FALSE: Operand = { t: 'bool', b: false };

/** A filter value in every form a row value may meet it in. */
interface Constant {
  isNull: boolean;
  /** From a JSON number. */
  num?: Decimal;
  /** From a string of digits: numeric columns take it (every digit kept), json numbers do not. */
  numText?: Decimal;
  time?: Instant;
  day?: number;
  bool?: boolean;
  text?: string;
  /** As JSON text: what a value of another kind (enum, array …) is compared with. */
  json: string;
}

function constant(v: Scalar): Constant {
  const c: Constant = { isNull: v === null, json: JSON.stringify(v) };
  if (typeof v === 'number') c.num = decimalOfNumber(v);
  else if (typeof v === 'boolean') c.bool = v;
  else if (typeof v === 'string') {
    c.text = v;
    if (v.length <= 200) c.numText = parseDecimal(v);
    const t = parseTime(v);
    if (t) {
      c.time = t.instant;
      c.day = t.day ?? (Number.isFinite(t.instant.ms) ? undefined : t.instant.ms);
    }
  }
  return c;
}

/** A JSON value's text (from a json column or a fragment of unknown kind), typed by its JSON type. */
function jsonOperand(text: string | undefined, numberType: 'num' | 'jnum'): Operand {
  if (text === undefined || text === 'null') return NULL;
  const c = text.charCodeAt(0);
  if (c === 0x22) {
    const s = stringOfFragment(text);
    return s === undefined ? { t: 'raw', s: text } : { t: 'text', s };
  }
  if (text === 'true') return TRUE;
  if (text === 'false') return FALSE;
  if (c === 0x7b || c === 0x5b) return { t: 'raw', s: text };
  const d = parseDecimal(text);
  return d ? { t: numberType, d } : { t: 'raw', s: text };
}

// The last value read: several operators on one column (`{"$gt": 1, "$lte": 9}`) read it once.
let last: { fragment: string; kind: ValueKind | undefined; path: ReadonlyArray<string | number> | null; operand: Operand } | undefined;

function operand(fragment: string, kind: ValueKind | undefined, path: ReadonlyArray<string | number> | null): Operand {
  if (last && last.fragment === fragment && last.kind === kind && last.path === path) return last.operand;
  const read = readOperand(fragment, kind, path);
  last = { fragment, kind, path, operand: read };
  return read;
}

function readOperand(fragment: string, kind: ValueKind | undefined, path: ReadonlyArray<string | number> | null): Operand {
  if (fragment === 'null') return NULL;
  switch (kind) {
    case 'numeric': {
      const d = parseDecimal(fragment.charCodeAt(0) === 0x22 ? (stringOfFragment(fragment) ?? '') : fragment);
      return d ? { t: 'num', d } : { t: 'raw', s: fragment };
    }
    case 'timestamp':
    case 'timestamptz':
    case 'date': {
      const s = stringOfFragment(fragment);
      const t = s === undefined ? undefined : parseTime(s);
      if (!t) return { t: 'raw', s: fragment };
      if (kind !== 'date') return { t: 'time', i: t.instant };
      return { t: 'day', n: t.day ?? t.instant.ms };
    }
    case 'boolean':
      return fragment === 'true' ? TRUE : fragment === 'false' ? FALSE : { t: 'raw', s: fragment };
    case 'text': {
      const s = stringOfFragment(fragment);
      return s === undefined ? { t: 'raw', s: fragment } : { t: 'text', s };
    }
    case 'json':
      return jsonOperand(path && path.length > 0 ? jsonAt(fragment, path) : fragment, 'jnum');
    case 'other':
      return { t: 'raw', s: fragment };
    default:
      // A row without kinds (a backfill page): its values typed by their JSON form.
      return jsonOperand(fragment, 'jnum');
  }
}

/** -1, 0, 1; undefined when the two are not of one type (they then are not equal, and not ordered). */
function compare(o: Operand, c: Constant): number | undefined {
  switch (o.t) {
    case 'num': {
      const d = c.num ?? c.numText;
      return d && compareDecimal(o.d, d);
    }
    case 'jnum':
      return c.num && compareDecimal(o.d, c.num);
    case 'time':
      return c.time && compareInstant(o.i, c.time);
    case 'day':
      return c.day === undefined ? undefined : o.n === c.day ? 0 : o.n < c.day ? -1 : 1;
    case 'text':
      return c.text === undefined ? undefined : compareText(o.s, c.text);
    case 'bool':
      return c.bool === undefined ? undefined : o.b === c.bool ? 0 : undefined;
    case 'raw':
      return o.s === c.json ? 0 : undefined;
    case 'null':
      return undefined;
  }
}

function equals(o: Operand, c: Constant): boolean {
  if (o.t === 'null' || c.isNull) return o.t === 'null' && c.isNull;
  return compare(o, c) === 0;
}

type RowTest = (o: Operand) => boolean;

function ordered(c: Constant, accept: (cmp: number) => boolean): RowTest {
  return (o) => {
    if (o.t === 'bool' || o.t === 'raw') return false;
    const cmp = compare(o, c);
    return cmp !== undefined && accept(cmp);
  };
}

function rowTest(op: string, value: Scalar | Scalar[]): RowTest {
  if (Array.isArray(value)) {
    const cs = value.map(constant);
    const inList: RowTest = (o) => cs.some((c) => equals(o, c));
    return op === '$in' ? inList : (o) => !inList(o);
  }
  const c = constant(value);
  switch (op) {
    case '$ne':
      return (o) => !equals(o, c);
    case '$lt':
      return ordered(c, (x) => x < 0);
    case '$lte':
      return ordered(c, (x) => x <= 0);
    case '$gt':
      return ordered(c, (x) => x > 0);
    case '$gte':
      return ordered(c, (x) => x >= 0);
    case '$isNull':
      return (o) => (o.t === 'null') === value;
    case '$startsWith':
      return (o) => o.t === 'text' && typeof value === 'string' && o.s.startsWith(value);
    default: // $eq, $changedFrom, $changedTo: equality, on the row each names
      return (o) => equals(o, c);
  }
}

type Test = (row: Row, change: FilterInput) => boolean;

/** A column's value in a row, read for `test`; false when the row lacks the column. */
function onColumn(
  column: string,
  path: ReadonlyArray<string | number> | null,
  test: RowTest,
  textTest: ((fragment: string) => boolean) | undefined,
): (row: Row | null) => boolean {
  return (row) => {
    const i = row?.indexOf.get(column);
    if (row == null || i === undefined) return false;
    const kind = row.kinds?.[i];
    if (textTest && kind === 'text') return textTest(row.fragments[i]!);
    return test(operand(row.fragments[i]!, kind, path));
  };
}

/**
 * Equality on a text column without reading the value: its fragment is JSON.stringify of the
 * text (values.ts renderString), so two texts are equal exactly when their fragments are.
 */
function textEquality(op: string, value: Scalar | Scalar[]): ((fragment: string) => boolean) | undefined {
  const values = Array.isArray(value) ? value : [value];
  if (!['$eq', '$ne', '$in', '$nin', '$changedFrom', '$changedTo'].includes(op)) return undefined;
  // Only strings and null: a number or boolean never equals a text, nor does the fast path know it.
  if (!values.every((v) => typeof v === 'string' || v === null)) return undefined;
  const fragments = new Set(values.map((v) => JSON.stringify(v)));
  const negated = op === '$ne' || op === '$nin';
  return (fragment) => fragments.has(fragment) !== negated;
}

/** Whether an UPDATE changed the column (every column may have, without the old row: changed_fields says the same). */
function changed(change: FilterInput, column: string): boolean {
  const i = change.record.indexOf.get(column);
  if (i === undefined) return false;
  if (!change.old) return true;
  const j = change.old.indexOf.get(column);
  return j === undefined || change.old.fragments[j] !== change.record.fragments[i];
}

function build(node: FilterNode): Test {
  switch (node.type) {
    case 'and': {
      const parts = node.of.map(build);
      return (row, change) => parts.every((p) => p(row, change));
    }
    case 'or': {
      const parts = node.of.map(build);
      return (row, change) => parts.some((p) => p(row, change));
    }
    case 'not': {
      const inner = build(node.of);
      return (row, change) => !inner(row, change);
    }
    case 'old': {
      const inner = build(node.of);
      return (_row, change) => change.old !== null && inner(change.old, change);
    }
    case 'changed': {
      const { columns } = node;
      return (_row, change) => change.operation === 'UPDATE' && columns.some((c) => changed(change, c));
    }
    case 'clause': {
      const test = onColumn(
        node.column,
        node.path,
        rowTest(node.op, node.value),
        node.path ? undefined : textEquality(node.op, node.value),
      );
      const { column } = node;
      if (node.op === '$changedFrom') {
        return (_row, change) => change.operation === 'UPDATE' && change.old !== null && changed(change, column) && test(change.old);
      }
      if (node.op === '$changedTo') {
        return (_row, change) => change.operation === 'UPDATE' && change.old !== null && changed(change, column) && test(change.record);
      }
      return (row) => test(row);
    }
  }
}

/**
 * The predicate of a filter document. A saved document was checked when it was saved; one that
 * no longer reads (it cannot happen through the api) matches nothing rather than everything.
 */
export function compileFilter(document: unknown): CompiledFilter {
  if (document == null) return () => true;
  const { node, issues } = parseFilter(document);
  if (issues.length > 0) return () => false;
  const test = build(node);
  return (change) => test(change.record, change);
}
