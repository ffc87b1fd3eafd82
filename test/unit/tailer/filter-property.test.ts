import { expect } from 'chai';
import fc from 'fast-check';
import { compileFilter, type FilterInput } from '../../../src/tailer/filter/compile.js';
import type { ValueKind } from '../../../src/tailer/filter/kinds.js';
import { parseFilter } from '../../../src/tailer/filter/language.js';
import type { Row } from '../../../src/tailer/match.js';

// The compiled filter against a reference evaluator written the plain way: rows are JS values
// (numeric as integer cents in a bigint, timestamps as bigint microseconds, text compared by
// code point arrays), rendered into the fragments the tailer sees (trailing zeros, offsets,
// escapes); filters are random trees of every operator. They must agree on every change.

interface Model {
  amount: bigint | null; // cents
  pad: number; // trailing zeros the numeric renders with (scale)
  name: string | null;
  at: bigint | null; // µs since the epoch
  offsetMin: number;
  flag: boolean | null;
  data: null | { a?: number | string | null };
}

const COLUMNS = ['amount', 'name', 'at', 'flag', 'data'] as const;
type Column = (typeof COLUMNS)[number];
const KINDS: ValueKind[] = ['numeric', 'text', 'timestamptz', 'boolean', 'json'];

// ---- rendering, as values.ts renders each type ----
function decimalText(cents: bigint, pad = 0): string {
  const neg = cents < 0n;
  const abs = neg ? -cents : cents;
  const text = `${abs / 100n}.${(abs % 100n).toString().padStart(2, '0')}${'0'.repeat(pad)}`;
  return neg ? `-${text}` : text;
}
function isoText(us: bigint, offsetMin: number): string {
  const local = us + BigInt(offsetMin) * 60_000_000n;
  const ms = Number((local - (((local % 1000n) + 1000n) % 1000n)) / 1000n);
  const micro = Number(((local % 1_000_000n) + 1_000_000n) % 1_000_000n);
  const base = new Date(ms).toISOString().slice(0, 19);
  const frac = micro === 0 ? '' : `.${micro.toString().padStart(6, '0').replace(/0+$/, '')}`;
  const sign = offsetMin < 0 ? '-' : '+';
  const o = Math.abs(offsetMin);
  return `${base}${frac}${sign}${String(Math.floor(o / 60)).padStart(2, '0')}:${String(o % 60).padStart(2, '0')}`;
}
function fragments(m: Model): string[] {
  return [
    m.amount === null ? 'null' : decimalText(m.amount, m.pad),
    m.name === null ? 'null' : JSON.stringify(m.name),
    m.at === null ? 'null' : JSON.stringify(isoText(m.at, m.offsetMin)),
    m.flag === null ? 'null' : String(m.flag),
    m.data === null ? 'null' : JSON.stringify(m.data),
  ];
}
const INDEX = new Map(COLUMNS.map((c, i) => [c as string, i]));
const toRow = (m: Model): Row => ({ names: COLUMNS, fragments: fragments(m), indexOf: INDEX, kinds: KINDS });

// ---- generators ----
const CHARS = ['a', 'b', 'z', 'é', '"', '\\', '\uffff', '\u{1F600}', '\u{10FFFF}', ' '];
const text = fc.array(fc.constantFrom(...CHARS), { maxLength: 4 }).map((cs) => cs.join(''));
const cents = fc.bigInt({ min: -100_000n, max: 100_000n });
const micros = fc.bigInt({ min: -2_000_000_000_000_000n, max: 4_000_000_000_000_000n }); // 1906 … 2096
const smallMicros = fc.constantFrom(0n, 1n, 999n, 1000n, 1_000_000n, -1n);
const model: fc.Arbitrary<Model> = fc.record({
  amount: fc.option(fc.oneof(cents, fc.constantFrom(0n, 100n, -100n, 5n)), { nil: null }),
  pad: fc.nat(3),
  name: fc.option(text, { nil: null }),
  at: fc.option(fc.oneof(micros, smallMicros), { nil: null }),
  offsetMin: fc.constantFrom(0, 60, -330, 345),
  flag: fc.option(fc.boolean(), { nil: null }),
  data: fc.option(fc.oneof(fc.constant({}), fc.record({ a: fc.oneof(fc.integer({ min: -3, max: 3 }), text, fc.constant(null)) })), {
    nil: null,
  }),
});
/** A change: an UPDATE's row before is the row after with some columns replaced. */
const change = fc
  .tuple(fc.constantFrom('INSERT', 'UPDATE', 'DELETE'), model, model, fc.array(fc.boolean(), { minLength: 7, maxLength: 7 }))
  .map(([operation, after, other, keep]) => {
    const before: Model = { ...after };
    const keys = Object.keys(after) as Array<keyof Model>;
    keys.forEach((k, i) => {
      if (!keep[i]) (before as unknown as Record<string, unknown>)[k] = other[k];
    });
    if (operation === 'INSERT') return { operation, record: after, old: null };
    if (operation === 'DELETE') return { operation, record: before, old: before };
    return { operation, record: after, old: before };
  });

type Value = { t: 'num'; v: bigint } | { t: 'time'; v: bigint } | { t: 'text'; v: string } | { t: 'bool'; v: boolean } | null;
type Op = '$eq' | '$ne' | '$lt' | '$lte' | '$gt' | '$gte' | '$in' | '$nin' | '$isNull' | '$startsWith' | '$changedFrom' | '$changedTo';
type Node =
  | { k: 'and' | 'or'; of: Node[] }
  | { k: 'not' | 'old'; of: Node }
  | { k: 'changed'; columns: Column[] }
  | { k: 'clause'; column: Column; op: Op; value: Value | Value[] | boolean; bare: boolean };

const valueOf = (column: Column): fc.Arbitrary<Value> => {
  switch (column) {
    case 'amount':
      return fc.oneof(cents, fc.constantFrom(0n, 100n, 5n)).map((v) => ({ t: 'num' as const, v }));
    case 'name':
      return text.map((v) => ({ t: 'text' as const, v }));
    case 'at':
      return fc.oneof(micros, smallMicros).map((v) => ({ t: 'time' as const, v }));
    case 'flag':
      return fc.boolean().map((v) => ({ t: 'bool' as const, v }));
    case 'data':
      return fc.oneof(
        fc.integer({ min: -3, max: 3 }).map((v) => ({ t: 'num' as const, v: BigInt(v) * 100n })),
        text.map((v) => ({ t: 'text' as const, v })),
      );
  }
};
const ORDERED_COLUMNS: Column[] = ['amount', 'name', 'at', 'data'];

function clause(inOld: boolean): fc.Arbitrary<Node> {
  return fc.constantFrom(...COLUMNS).chain((column) => {
    const value = valueOf(column);
    const nullable = fc.option(value, { nil: null, freq: 5 });
    const ops: Array<fc.Arbitrary<Node>> = [
      fc.tuple(nullable, fc.boolean()).map(([v, bare]) => ({ k: 'clause' as const, column, op: '$eq' as Op, value: v, bare })),
      nullable.map((v) => ({ k: 'clause' as const, column, op: '$ne' as Op, value: v, bare: false })),
      fc
        .tuple(fc.constantFrom<Op>('$in', '$nin'), fc.array(nullable, { minLength: 1, maxLength: 3 }))
        .map(([op, v]) => ({ k: 'clause' as const, column, op, value: v, bare: false })),
      fc.boolean().map((v) => ({ k: 'clause' as const, column, op: '$isNull' as Op, value: v, bare: false })),
    ];
    if (ORDERED_COLUMNS.includes(column)) {
      ops.push(
        fc
          .tuple(fc.constantFrom<Op>('$lt', '$lte', '$gt', '$gte'), value)
          .map(([op, v]) => ({ k: 'clause' as const, column, op, value: v, bare: false })),
      );
    }
    if (column === 'name' || column === 'data') {
      ops.push(text.map((v) => ({ k: 'clause' as const, column, op: '$startsWith' as Op, value: { t: 'text' as const, v }, bare: false })));
    }
    if (!inOld) {
      ops.push(
        fc
          .tuple(fc.constantFrom<Op>('$changedFrom', '$changedTo'), nullable)
          .map(([op, v]) => ({ k: 'clause' as const, column, op, value: v, bare: false })),
      );
    }
    return fc.oneof(...ops);
  });
}

function tree(depth: number, inOld: boolean): fc.Arbitrary<Node> {
  const leaves: Array<fc.Arbitrary<Node>> = [clause(inOld)];
  if (!inOld) leaves.push(fc.subarray([...COLUMNS], { minLength: 1 }).map((columns) => ({ k: 'changed' as const, columns })));
  if (depth === 0) return fc.oneof(...leaves);
  const sub = tree(depth - 1, inOld);
  const branches: Array<fc.Arbitrary<Node>> = [
    fc.array(sub, { minLength: 1, maxLength: 3 }).map((of) => ({ k: 'and' as const, of })),
    fc.array(sub, { minLength: 1, maxLength: 3 }).map((of) => ({ k: 'or' as const, of })),
    sub.map((of) => ({ k: 'not' as const, of })),
  ];
  if (!inOld) branches.push(tree(depth - 1, true).map((of) => ({ k: 'old' as const, of })));
  return fc.oneof({ weight: 2, arbitrary: fc.oneof(...leaves) }, { weight: 3, arbitrary: fc.oneof(...branches) });
}

// ---- the document a tree is written as ----
function written(v: Value, column: Column, asString: boolean, offsetMin: number): unknown {
  if (v === null) return null;
  if (v.t === 'num') return column === 'data' ? Number(v.v / 100n) : asString ? decimalText(v.v) : Number(decimalText(v.v));
  if (v.t === 'time') return isoText(v.v, offsetMin).replace(/\+00:00$/, 'Z');
  return v.v;
}
function documentOf(n: Node, style: number): Record<string, unknown> {
  switch (n.k) {
    case 'and':
    case 'or':
      return { [`$${n.k}`]: n.of.map((c, i) => documentOf(c, style + i)) };
    case 'not':
    case 'old':
      return { [`$${n.k}`]: documentOf(n.of, style + 1) };
    case 'changed':
      return { $changed: n.columns };
    case 'clause': {
      const w = (v: Value) => written(v, n.column, style % 2 === 0, [0, 60, -330][style % 3]!);
      const operand = n.op === '$isNull' ? n.value : Array.isArray(n.value) ? n.value.map(w) : w(n.value as Value);
      if (n.bare && n.column !== 'data') return { [n.column]: operand };
      return { [n.column]: n.column === 'data' ? { $path: ['a'], [n.op]: operand } : { [n.op]: operand } };
    }
  }
}

// ---- the reference ----
function cell(m: Model, column: Column): Value {
  switch (column) {
    case 'amount':
      return m.amount === null ? null : { t: 'num', v: m.amount };
    case 'name':
      return m.name === null ? null : { t: 'text', v: m.name };
    case 'at':
      return m.at === null ? null : { t: 'time', v: m.at };
    case 'flag':
      return m.flag === null ? null : { t: 'bool', v: m.flag };
    case 'data': {
      const a = m.data?.a;
      if (a === undefined || a === null) return null;
      return typeof a === 'number' ? { t: 'num', v: BigInt(a) * 100n } : { t: 'text', v: a };
    }
  }
}
const codePoints = (s: string) => Array.from(s, (c) => c.codePointAt(0)!);
function cmp(a: Value, b: Value): number | undefined {
  if (a === null || b === null || a.t !== b.t) return undefined;
  if (a.t === 'text') {
    const [x, y] = [codePoints(a.v), codePoints(b.v as string)];
    for (let i = 0; i < Math.min(x.length, y.length); i++) if (x[i] !== y[i]) return x[i]! < y[i]! ? -1 : 1;
    return Math.sign(x.length - y.length);
  }
  if (a.t === 'bool') return a.v === b.v ? 0 : undefined;
  const [x, y] = [a.v as bigint, b.v as bigint];
  return x === y ? 0 : x < y ? -1 : 1;
}
const eq = (a: Value, b: Value) => (a === null || b === null ? a === b : cmp(a, b) === 0);

function test(n: Extract<Node, { k: 'clause' }>, v: Value): boolean {
  const c = n.value as Value;
  switch (n.op) {
    case '$ne':
      return !eq(v, c);
    case '$in':
      return (n.value as Value[]).some((x) => eq(v, x));
    case '$nin':
      return !(n.value as Value[]).some((x) => eq(v, x));
    case '$isNull':
      return (v === null) === n.value;
    case '$startsWith':
      return v?.t === 'text' && v.v.startsWith((c as { v: string }).v);
    case '$lt':
    case '$lte':
    case '$gt':
    case '$gte': {
      const r = cmp(v, c);
      if (r === undefined) return false;
      return { $lt: r < 0, $lte: r <= 0, $gt: r > 0, $gte: r >= 0 }[n.op];
    }
    default:
      return eq(v, c);
  }
}

interface ModelChange {
  operation: string;
  record: Model;
  old: Model | null;
}
function reference(n: Node, row: Model, ch: ModelChange): boolean {
  const changed = (col: Column) => ch.old !== null && fragments(ch.old)[INDEX.get(col)!] !== fragments(ch.record)[INDEX.get(col)!];
  switch (n.k) {
    case 'and':
      return n.of.every((c) => reference(c, row, ch));
    case 'or':
      return n.of.some((c) => reference(c, row, ch));
    case 'not':
      return !reference(n.of, row, ch);
    case 'old':
      return ch.old !== null && reference(n.of, ch.old, ch);
    case 'changed':
      return ch.operation === 'UPDATE' && n.columns.some(changed);
    case 'clause':
      if (n.op === '$changedFrom' || n.op === '$changedTo') {
        if (ch.operation !== 'UPDATE' || !changed(n.column)) return false;
        return test(n, cell(n.op === '$changedFrom' ? ch.old! : ch.record, n.column));
      }
      return test(n, cell(row, n.column));
  }
}

const KIND_OF = new Map(COLUMNS.map((c, i) => [c as string, KINDS[i]!]));

describe('unit: the compiled filter agrees with a reference evaluator', () => {
  it('on random filters over random INSERT, UPDATE and DELETE changes', () => {
    fc.assert(
      fc.property(tree(3, false), fc.nat(5), fc.array(change, { minLength: 1, maxLength: 8 }), (node, style, changes) => {
        const doc = documentOf(node, style);
        expect(parseFilter(doc, KIND_OF).issues, JSON.stringify(doc)).to.deep.equal([]);
        const compiled = compileFilter(doc);
        for (const ch of changes) {
          const input: FilterInput = { operation: ch.operation, record: toRow(ch.record), old: ch.old && toRow(ch.old) };
          expect(
            compiled(input),
            `${JSON.stringify(doc)} on ${JSON.stringify(input, (_k, v: unknown) => (typeof v === 'bigint' ? String(v) : v))}`,
          ).to.equal(reference(node, ch.record, ch));
        }
      }),
      { numRuns: 2000 },
    );
  });
});
