import { expect } from 'chai';
import { compileFilter, type FilterInput } from '../../../src/tailer/filter/compile.js';
import { compareText, parseDecimal, compareDecimal, parseTime } from '../../../src/tailer/filter/compare.js';
import { jsonAt } from '../../../src/tailer/filter/json-path.js';
import type { ValueKind } from '../../../src/tailer/filter/kinds.js';
import { filterColumns, parseFilter } from '../../../src/tailer/filter/language.js';
import type { Row } from '../../../src/tailer/match.js';

// The filter language without a database: what a document is refused for (and where), and what
// the compiled predicate takes, on rows as the decoder renders them (JSON fragments with kinds).

const KINDS = new Map<string, ValueKind>([
  ['id', 'numeric'],
  ['total', 'numeric'],
  ['status', 'text'],
  ['email', 'text'],
  ['paid', 'boolean'],
  ['at', 'timestamptz'],
  ['local', 'timestamp'],
  ['day', 'date'],
  ['data', 'json'],
  ['mood', 'other'],
]);

function row(values: Record<string, string>): Row {
  const names = Object.keys(values);
  return {
    names,
    fragments: names.map((n) => values[n]!),
    indexOf: new Map(names.map((n, i) => [n, i])),
    kinds: names.map((n) => KINDS.get(n) ?? 'other'),
  };
}

const BASE = {
  id: '9007199254740993',
  total: '100.50',
  status: '"paid"',
  email: '"a@example.com"',
  paid: 'true',
  at: '"2026-01-02T03:04:05.123456+01:00"',
  local: '"2026-01-02T03:04:05"',
  day: '"2026-01-02"',
  data: '{"a": {"b": 12345678901234567890.5, "s": "x\\"y"}, "list": [1, "two", null]}',
  mood: '"happy"',
};

const insert = (over: Record<string, string> = {}): FilterInput => ({ operation: 'INSERT', record: row({ ...BASE, ...over }), old: null });
const update = (before: Record<string, string>, after: Record<string, string>): FilterInput => ({
  operation: 'UPDATE',
  record: row({ ...BASE, ...after }),
  old: row({ ...BASE, ...before }),
});
const remove = (over: Record<string, string> = {}): FilterInput => {
  const r = row({ ...BASE, ...over });
  return { operation: 'DELETE', record: r, old: r };
};

const refusals = (doc: unknown) => parseFilter(doc, KINDS).issues.map((i) => `${i.path.join('.')}: ${i.message}`);
const takes = (doc: unknown, change: FilterInput) => {
  expect(refusals(doc), JSON.stringify(doc)).to.deep.equal([]);
  return compileFilter(doc)(change);
};

describe('unit: the filter language', () => {
  it('equality keeps its meaning: numbers by exact value, strings exactly, null as a value', () => {
    expect(takes({ status: 'paid' }, insert())).to.equal(true);
    expect(takes({ status: 'Paid' }, insert())).to.equal(false);
    expect(takes({ total: 100.5 }, insert())).to.equal(true);
    expect(takes({ id: '9007199254740993' }, insert())).to.equal(true);
    expect(takes({ id: '9007199254740992' }, insert())).to.equal(false); // 2^53 is not 2^53 + 1
    expect(takes({ email: null }, insert({ email: 'null' }))).to.equal(true);
    expect(takes({ email: null }, insert())).to.equal(false);
    expect(takes({}, insert())).to.equal(true);
  });

  it('numeric comparisons are exact decimals, with Postgres’s NaN and infinities', () => {
    expect(takes({ total: { $gt: 100 } }, insert())).to.equal(true);
    expect(takes({ total: { $gt: '100.50' } }, insert())).to.equal(false);
    expect(takes({ total: { $gte: '100.5000' } }, insert())).to.equal(true);
    expect(takes({ total: { $lt: -1 } }, insert({ total: '-1.000000000000000000001' }))).to.equal(true);
    expect(takes({ total: { $gt: '99999999999999999999' } }, insert({ total: '100000000000000000000' }))).to.equal(true);
    expect(takes({ total: { $gt: 1e300 } }, insert({ total: '"Infinity"' }))).to.equal(true);
    expect(takes({ total: { $gt: '1' } }, insert({ total: '"NaN"' }))).to.equal(true); // NaN sorts above every number
    expect(takes({ total: { $lt: 0 } }, insert({ total: '"-Infinity"' }))).to.equal(true);
    expect(takes({ total: { $lt: 1 } }, insert({ total: 'null' }))).to.equal(false);
  });

  it('timestamps compare as instants whatever the offset, to the microsecond; dates as days', () => {
    expect(takes({ at: { $eq: '2026-01-02T02:04:05.123456Z' } }, insert())).to.equal(true);
    expect(takes({ at: { $gt: '2026-01-02T02:04:05.123455Z' } }, insert())).to.equal(true);
    expect(takes({ at: { $gt: '2026-01-02T02:04:05.123456Z' } }, insert())).to.equal(false);
    expect(takes({ at: { $lt: '2026-01-02T03:00:00+00:00' } }, insert())).to.equal(true); // 02:04 UTC
    expect(takes({ at: { $gt: '9999-01-01T00:00:00Z' } }, insert({ at: '"infinity"' }))).to.equal(true);
    expect(takes({ at: { $lt: '0001-01-01T00:00:00Z' } }, insert({ at: '"0044-03-15T12:00:00+00:00 BC"' }))).to.equal(true);
    expect(takes({ local: { $gte: '2026-01-02T03:04:05' } }, insert())).to.equal(true);
    expect(takes({ day: { $in: ['2026-01-01', '2026-01-02'] } }, insert())).to.equal(true);
    expect(takes({ day: { $gt: '2025-12-31' } }, insert())).to.equal(true);
  });

  it('text compares by code point; $startsWith is a plain prefix (no patterns)', () => {
    expect(takes({ status: { $gt: 'pa' } }, insert())).to.equal(true);
    expect(takes({ status: { $startsWith: 'pa' } }, insert())).to.equal(true);
    expect(takes({ status: { $startsWith: 'p.*' } }, insert())).to.equal(false);
    expect(compareText('\uffff', '\u{1F600}')).to.equal(-1); // UTF-16 order would say the opposite
    expect(takes({ status: { $lt: '\u{1F600}' } }, insert({ status: JSON.stringify('\uffff') }))).to.equal(true);
  });

  it('$ne, $nin and $isNull treat null as a value; booleans; other types by their text', () => {
    expect(takes({ email: { $ne: 'x' } }, insert({ email: 'null' }))).to.equal(true);
    expect(takes({ email: { $nin: ['x', null] } }, insert({ email: 'null' }))).to.equal(false);
    expect(takes({ email: { $isNull: true } }, insert({ email: 'null' }))).to.equal(true);
    expect(takes({ email: { $isNull: false } }, insert())).to.equal(true);
    expect(takes({ paid: false }, insert())).to.equal(false);
    expect(takes({ paid: { $ne: false } }, insert())).to.equal(true);
    expect(takes({ mood: { $in: ['sad', 'happy'] } }, insert())).to.equal(true);
  });

  it('$path reaches into json, numbers keep every digit, a missing path is null', () => {
    expect(takes({ data: { $path: ['a', 'b'], $gt: 12345678901234567000 } }, insert())).to.equal(true);
    expect(takes({ data: { $path: ['a', 'b'], $eq: '12345678901234567890.5' } }, insert())).to.equal(false); // a string is not a number in json
    expect(takes({ data: { $path: ['a', 's'], $eq: 'x"y' } }, insert())).to.equal(true);
    expect(takes({ data: { $path: ['list', 1], $eq: 'two' } }, insert())).to.equal(true);
    expect(takes({ data: { $path: ['list', '2'], $isNull: true } }, insert())).to.equal(true);
    expect(takes({ data: { $path: ['nope', 'x'], $isNull: true } }, insert())).to.equal(true);
    expect(takes({ data: { $path: ['nope'], $eq: 1 } }, insert())).to.equal(false);
    expect(jsonAt(' { "k" : [ 1 , {"z": -2.50e3} ] , "k": 7 } ', ['k'])).to.equal('7'); // the last of a repeated key
    expect(jsonAt('{"k": [1, {"z": -2.50e3}]}', ['k', 1, 'z'])).to.equal('-2.50e3');
  });

  it('$and, $or, $not combine; $old looks at the row before; DELETE filters on the deleted row', () => {
    const doc = { $or: [{ status: 'paid' }, { total: { $gt: 1000 } }], $not: { email: { $startsWith: 'spam' } } };
    expect(takes(doc, insert())).to.equal(true);
    expect(takes(doc, insert({ status: '"open"' }))).to.equal(false);
    expect(takes(doc, insert({ email: '"spam@x"' }))).to.equal(false);
    expect(takes({ $old: { status: 'open' } }, update({ status: '"open"' }, {}))).to.equal(true);
    expect(takes({ $old: { status: 'open' } }, insert({ status: '"open"' }))).to.equal(false); // no old row
    expect(takes({ status: 'paid' }, remove())).to.equal(true);
    expect(takes({ $old: { status: 'paid' } }, remove())).to.equal(true);
  });

  it('$changed, $changedFrom and $changedTo hold for UPDATEs only', () => {
    expect(takes({ $changed: ['email', 'status'] }, update({ email: '"old@x"' }, {}))).to.equal(true);
    expect(takes({ $changed: ['status'] }, update({ email: '"old@x"' }, {}))).to.equal(false);
    expect(takes({ $changed: ['status'] }, insert())).to.equal(false);
    expect(takes({ $changed: ['status'] }, remove())).to.equal(false);
    const paidNow = { status: { $changedFrom: 'pending', $changedTo: 'paid' } };
    expect(takes(paidNow, update({ status: '"pending"' }, {}))).to.equal(true);
    expect(takes(paidNow, update({ status: '"open"' }, {}))).to.equal(false);
    expect(takes(paidNow, update({ status: '"pending"' }, { status: '"open"' }))).to.equal(false);
    expect(takes(paidNow, update({}, {}))).to.equal(false); // paid before and after: not changed
    expect(takes({ total: { $changedTo: 200 } }, update({}, { total: '200.00' }))).to.equal(true);
  });

  it('a column the row lacks (dropped since) makes its condition false', () => {
    const r = { operation: 'INSERT', record: row({ status: '"paid"' }), old: null };
    expect(compileFilter({ total: { $isNull: true } })(r)).to.equal(false);
    expect(compileFilter({ $not: { total: 1 } })(r)).to.equal(true);
  });

  it('refuses what it cannot mean, saying where', () => {
    expect(refusals({ nope: 1 })).to.deep.equal(['nope: is not a column of the table']);
    expect(refusals({ total: { $gt: 'abc' } })[0]).to.match(/^total\.\$gt: must be a number/);
    expect(refusals({ total: { $regex: '.*' } })[0]).to.match(/^total\.\$regex: is not an operator/);
    expect(refusals({ $and: [{ status: { $lt: null } }] })[0]).to.match(/^\$and\.0\.status\.\$lt: must not be null/);
    expect(refusals({ paid: { $gt: true } })[0]).to.match(/^paid\.\$gt: booleans have no order/);
    expect(refusals({ status: { $path: ['a'], $eq: 1 } })[0]).to.match(/^status\.\$path: only json and jsonb columns/);
    expect(refusals({ $old: { $changed: ['status'] } })[0]).to.match(/^\$old\.\$changed: is about the change/);
    expect(refusals({ $old: { status: { $changedTo: 'x' } } })[0]).to.match(/^\$old\.status\.\$changedTo: is about the change/);
    expect(refusals({ at: { $gt: '2026-01-01T00:00:00' } })[0]).to.match(/^at\.\$gt: must be an ISO 8601 timestamp with an offset/);
    expect(refusals({ local: { $gt: '2026-01-01T00:00:00+02:00' } })[0]).to.match(/^local\.\$gt: must be an ISO 8601 timestamp without/);
    expect(refusals({ day: '2026-02-30' })[0]).to.match(/^day: must be a date/);
    expect(refusals({ status: ['a'] })[0]).to.match(/^status: must be a value/);
    expect(refusals({ status: {} })[0]).to.match(/^status: must name an operator/);
    expect(refusals({ $or: [] })[0]).to.match(/^\$or: must be a list of 1 to 100 filters/);
    expect(refusals({ $changed: ['status', 'gone'] })).to.deep.equal(['$changed.1: is not a column of the table']);
    expect(refusals([])[0]).to.match(/^: must be an object/);
  });

  it('is bounded: depth, clauses, lists and strings', () => {
    let deep: unknown = { status: 'paid' };
    for (let i = 0; i < 9; i++) deep = { $not: deep };
    expect(refusals(deep)[0]).to.match(/nested more than 8 levels deep/);
    const wide = Object.fromEntries(Array.from({ length: 101 }, (_, i) => [`c${i}`, 1]));
    expect(parseFilter(wide).issues[0]!.message).to.match(/at most 100 keys/);
    const many = { $and: Array.from({ length: 65 }, (_, i) => ({ status: String(i) })) };
    expect(refusals(many)[0]).to.match(/more than 64 clauses/);
    expect(refusals({ status: { $in: Array.from({ length: 101 }, String) } })[0]).to.match(/1 to 100 values/);
    expect(refusals({ status: 'x'.repeat(1025) })[0]).to.match(/at most 1024 characters/);
    expect(refusals({ data: { $path: Array.from({ length: 17 }, String), $eq: 1 } })[0]).to.match(/at most 16 keys/);
  });

  it('names every column it uses, wherever (for the problems of a dropped column)', () => {
    const doc = { status: 'x', $or: [{ $old: { total: 1 } }, { $changed: ['email'] }], data: { $path: ['not_a_column'], $eq: 1 } };
    expect(filterColumns(doc).sort()).to.deep.equal(['data', 'email', 'status', 'total']);
  });

  it('decimals and times are read exactly', () => {
    expect(compareDecimal(parseDecimal('0.10')!, parseDecimal('0.1')!)).to.equal(0);
    expect(compareDecimal(parseDecimal('-0')!, parseDecimal('0.000')!)).to.equal(0);
    expect(compareDecimal(parseDecimal('1e+21')!, parseDecimal('1000000000000000000000')!)).to.equal(0);
    expect(compareDecimal(parseDecimal('1.5e-7')!, parseDecimal('0.00000015')!)).to.equal(0);
    expect(compareDecimal(parseDecimal('-2')!, parseDecimal('-10')!)).to.equal(1);
    expect(parseTime('2026-01-02T03:04:05+05:53:28')!.instant.ms).to.equal(Date.parse('2026-01-01T21:10:37Z'));
    expect(parseTime('0099-06-01')!.day).to.equal(Math.round(Date.parse('0099-06-01T00:00:00Z') / 86_400_000));
    expect(parseTime('2026-13-01')).to.equal(undefined);
  });
});
