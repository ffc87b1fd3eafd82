import { compileFilter, type FilterInput } from '../../src/tailer/filter/compile.js';
import type { ValueKind } from '../../src/tailer/filter/kinds.js';
import type { Row } from '../../src/tailer/match.js';
import type { Bench } from './run.js';
import { round, summarize } from './stats.js';

// What a filter costs the tailer per change: a 10-clause filter (numeric, text, timestamptz,
// boolean, a jsonb path, the old row and what changed) against the equality filter
// `{"status": "paid"}`, each compiled once and run over the same 1,000 UPDATEs of a 10-column
// row as the decoder renders them. A micro-benchmark in the bench process: no Postgres, no I/O.

const RUNS = Number(process.env.BENCH_FILTER_RUNS ?? 7);
const PASSES = Number(process.env.BENCH_FILTER_PASSES ?? 200);

const COLUMNS = ['id', 'account_id', 'status', 'total', 'currency', 'created_at', 'paid', 'email', 'data', 'note'];
const KINDS: ValueKind[] = ['numeric', 'numeric', 'text', 'numeric', 'text', 'timestamp', 'boolean', 'text', 'json', 'text'];
const INDEX = new Map(COLUMNS.map((c, i) => [c, i]));

const TEN_CLAUSES = {
  status: { $in: ['paid', 'refunded'] },
  total: { $gt: 100, $lte: '100000.00' },
  currency: { $ne: 'XXX' },
  created_at: { $gte: '2026-01-01T00:00:00Z' },
  paid: true,
  email: { $startsWith: 'user' },
  data: { $path: ['customer', 'tier'], $eq: 'gold' },
  $changed: ['status', 'total'],
  $old: { total: { $lte: 100 } },
};
const EQUALITY = { status: 'paid' };

function row(i: number, before: boolean): Row {
  const total = before ? 50 + (i % 100) : 90 + (i % 300);
  const fragments = [
    String(i),
    String(i % 97),
    JSON.stringify(i % 3 === 0 && before ? 'pending' : 'paid'),
    `${total}.${String(i % 100).padStart(2, '0')}`,
    '"EUR"',
    `"2026-0${1 + (i % 9)}-1${i % 10}T10:20:30.${i % 1000}+00:00"`,
    i % 5 === 0 ? 'false' : 'true',
    `"user${i}@example.com"`,
    `{"customer": {"id": ${i}, "tier": "${i % 4 === 0 ? 'silver' : 'gold'}"}, "lines": [1, 2, 3]}`,
    'null',
  ];
  return { names: COLUMNS, fragments, indexOf: INDEX, kinds: KINDS };
}

const CHANGES: FilterInput[] = Array.from({ length: 1000 }, (_, i) => ({ operation: 'UPDATE', record: row(i, false), old: row(i, true) }));

/** µs per evaluation over PASSES passes of the changes; `taken` keeps the result alive (and is checked). */
function perChangeUs(filter: object): { us: number; taken: number } {
  const f = compileFilter(filter);
  let taken = 0;
  const start = process.hrtime.bigint();
  for (let p = 0; p < PASSES; p++) for (const c of CHANGES) if (f(c)) taken++;
  const ns = Number(process.hrtime.bigint() - start);
  return { us: ns / 1000 / (PASSES * CHANGES.length), taken: taken / PASSES };
}

async function filterCost(b: Bench): Promise<void> {
  perChangeUs(TEN_CLAUSES); // warm-up: let both be optimised before measuring
  perChangeUs(EQUALITY);
  const ten: number[] = [];
  const eq: number[] = [];
  let taken = { ten: 0, eq: 0 };
  for (let r = 0; r < RUNS; r++) {
    // Alternating, so that drift of the machine weighs on both alike.
    const a = perChangeUs(TEN_CLAUSES);
    const e = perChangeUs(EQUALITY);
    ten.push(round(a.us, 3));
    eq.push(round(e.us, 3));
    taken = { ten: a.taken, eq: e.taken };
  }
  const value = summarize(ten);
  const baseline = summarize(eq);
  b.record({
    path: 'filter evaluation cost per change (µs), a 10-clause filter, in the tailer',
    unit: 'µs per change',
    value,
    baseline: { name: 'the equality filter {"status": "paid"}', value: baseline },
    ratio: round(value.median / baseline.median, 1),
    target: '≤ 10 µs per change (≥ 100,000 changes/s per core for the filter alone)',
    met: value.median <= 10,
    extra: { changesTaken: taken, changes: CHANGES.length, passes: PASSES },
  });
}

export function filterPaths(b: Bench): Array<[string, () => Promise<void>]> {
  return [['filter', () => filterCost(b)]];
}
