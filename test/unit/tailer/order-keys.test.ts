import { expect } from 'chai';
import type { Change } from '../../../src/tailer/events.js';
import type { Row } from '../../../src/tailer/match.js';
import { changeRows, orderKey, rowIdentity } from '../../../src/tailer/order-keys.js';

// Row ordering's keys: a subscription and a row's table and primary-key values, spelled so that
// no two different rows share a key (and the same row always has the same one).

/** The key of a change's rows for one subscription, as a row-ordered delivery carries them. */
const changeOrderKeys = (c: Change, keyColumns: number[] | null, webhookId = 'wh_1') =>
  changeRows(c, keyColumns)?.map((r) => orderKey(webhookId, r)) ?? null;
const key = (schema: string, table: string, r: Row, columns: number[], webhookId = 'wh_1') =>
  orderKey(webhookId, rowIdentity(schema, table, r, columns));

function row(values: Record<string, string>): Row {
  const names = Object.keys(values);
  return { names, fragments: names.map((n) => values[n]!), indexOf: new Map(names.map((n, i) => [n, i])) };
}

function change(operation: Change['operation'], record: Row, old: Row | null = null, table = 'order_lines'): Change {
  return {
    eventId: 'evt_0000000001A2B3C4_000001',
    operation,
    schema: 'shop_master',
    table,
    committedAt: new Date(0),
    record,
    old,
    changedFields: [],
  };
}

describe('unit: row order keys', () => {
  // order_lines (order_id, line, qty), primary key (order_id, line)
  const KEY = [0, 1];
  const line = (orderId: string, lineNo: string, qty = '1') => row({ order_id: orderId, line: lineNo, qty });

  it('the same row has the same key whatever else changed; another row another key', () => {
    const a = changeOrderKeys(change('INSERT', line('1', '1', '5')), KEY);
    const b = changeOrderKeys(change('UPDATE', line('1', '1', '6'), line('1', '1', '5')), KEY);
    const c = changeOrderKeys(change('DELETE', line('1', '1', '6'), line('1', '1', '6')), KEY);
    expect(a).to.have.length(1);
    expect(b).to.deep.equal(a);
    expect(c).to.deep.equal(a);
    expect(changeOrderKeys(change('INSERT', line('1', '2')), KEY)).not.to.deep.equal(a);
    expect(changeOrderKeys(change('INSERT', line('2', '1')), KEY)).not.to.deep.equal(a);
  });

  it('a composite key uses every key column, in key order, and no other column', () => {
    expect(key('s', 't', line('1', '2'), [0, 1])).not.to.equal(key('s', 't', line('2', '1'), [0, 1]));
    expect(key('s', 't', line('1', '2'), [0, 1])).not.to.equal(key('s', 't', line('1', '2'), [1, 0]));
    expect(key('s', 't', line('1', '2', '7'), [0, 1])).to.equal(key('s', 't', line('1', '2', '8'), [0, 1]));
  });

  it('a change of the primary key orders with both keys: the new one first, then the old one', () => {
    const before = changeOrderKeys(change('INSERT', line('1', '1')), KEY)!;
    const after = changeOrderKeys(change('INSERT', line('1', '9')), KEY)!;
    const moved = changeOrderKeys(change('UPDATE', line('1', '9'), line('1', '1')), KEY);
    expect(moved).to.deep.equal([after[0], before[0]]);
    // Without the old image (not REPLICA IDENTITY FULL) only the new key is known.
    expect(changeOrderKeys(change('UPDATE', line('1', '9'), null), KEY)).to.deep.equal(after);
  });

  it('values cannot run into each other: separators, quotes and escapes inside text keys', () => {
    const text = (a: string, b: string) => key('s', 't', row({ a: JSON.stringify(a), b: JSON.stringify(b) }), [0, 1]);
    const keys = [
      text('a,b', 'c'),
      text('a', 'b,c'),
      text('a","b', 'c'),
      text('a', '","b'),
      text('a\\', 'b'),
      text('a', '\\b'),
      text('a\0', 'b'),
      text('a', '\0b'),
      text('', 'ab'),
      text('ab', ''),
    ];
    expect(new Set(keys).size).to.equal(keys.length);
    // A text '1' and a number 1 are different values.
    expect(key('s', 't', row({ id: '"1"' }), [0])).not.to.equal(key('s', 't', row({ id: '1' }), [0]));
    // NULL (a key column is never null, but a fragment may say so) is not the text 'null'.
    expect(key('s', 't', row({ id: 'null' }), [0])).not.to.equal(key('s', 't', row({ id: '"null"' }), [0]));
  });

  it('the table is part of the key: the same values in another table or schema are another row', () => {
    const r = row({ id: '1' });
    const keys = [key('s', 't', r, [0]), key('s', 'u', r, [0]), key('x', 't', r, [0]), key('s.t', '', r, [0]), key('s', '.t', r, [0])];
    expect(new Set(keys).size).to.equal(keys.length);
  });

  it('the subscription is part of the key: two subscriptions of one table never wait for each other', () => {
    const r = row({ id: '1' });
    expect(key('s', 't', r, [0], 'wh_a')).not.to.equal(key('s', 't', r, [0], 'wh_b'));
    // …with no way to run the subscription id into the row.
    expect(orderKey('wh_a', '["s","t",1]')).not.to.equal(orderKey('wh_a"', 's","t",1]'));
  });

  it('keys are short and fixed in length, whatever the values (they go into an index)', () => {
    const long = key('s', 't', row({ id: JSON.stringify('x'.repeat(100_000)) }), [0]);
    expect(long).to.match(/^[A-Za-z0-9_-]{43}$/);
    expect(key('s', 't', row({ id: '1' }), [0])).to.have.length(43);
  });

  it('no key columns (a table without a primary key): no keys, the change is unordered', () => {
    expect(changeOrderKeys(change('INSERT', line('1', '1')), null)).to.equal(null);
    expect(changeOrderKeys(change('INSERT', line('1', '1')), [])).to.equal(null);
  });
});
