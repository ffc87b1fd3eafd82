import { expect } from 'chai';
import { matchDeliveries, readDelivery, type Change } from '../../../src/tailer/events.js';
import type { Row } from '../../../src/tailer/match.js';
import { changeGroups, groupIdentity, orderKey, rowIdentity } from '../../../src/tailer/order-keys.js';
import { specOrdering, type SubscriptionSpec } from '../../../src/tailer/subscriptions.js';

// Group ordering's keys (`ordering: {by: [columns]}`): the changes whose group values are equal
// share a key, a change that moves its row to another group carries both groups' keys, and no
// group key ever meets a row key or another subscription's key.

function row(values: Record<string, string>): Row {
  const names = Object.keys(values);
  return { names, fragments: names.map((n) => values[n]!), indexOf: new Map(names.map((n, i) => [n, i])) };
}

/** ledger (id, account_id, currency, amount): a ledger line of an account. */
const line = (id: number, account: string, currency = '"EUR"', amount = '1') =>
  row({ id: String(id), account_id: account, currency, amount });

function change(operation: Change['operation'], record: Row, old: Row | null = null, table = 'ledger'): Change {
  return {
    eventId: 'evt_0000000001A2B3C4_000001',
    operation,
    schema: 'bank_master',
    table,
    committedAt: new Date(0),
    record,
    old,
    changedFields: [],
  };
}

const BY_ACCOUNT = ['account_id'];
const keys = (c: Change, columns: string[] = BY_ACCOUNT, webhookId = 'wh_1') =>
  changeGroups(c, columns)?.map((g) => orderKey(webhookId, g)) ?? null;

describe('unit: group order keys', () => {
  it("the rows of one account share one key whatever else they hold; another account's rows another", () => {
    const a1 = keys(change('INSERT', line(1, '7')));
    expect(a1).to.have.length(1);
    expect(keys(change('INSERT', line(2, '7', '"USD"', '99')))).to.deep.equal(a1);
    expect(keys(change('UPDATE', line(1, '7', '"EUR"', '2'), line(1, '7')))).to.deep.equal(a1);
    // DELETE: record holds the deleted row, its group is the key.
    expect(keys(change('DELETE', line(1, '7'), line(1, '7')))).to.deep.equal(a1);
    expect(keys(change('INSERT', line(1, '8')))).not.to.deep.equal(a1);
  });

  it('a change of the group value orders under both groups: the new one first, then the old one', () => {
    const to = keys(change('INSERT', line(5, '2')))!;
    const from = keys(change('INSERT', line(5, '1')))!;
    expect(keys(change('UPDATE', line(5, '2'), line(5, '1')))).to.deep.equal([to[0], from[0]]);
    // An UPDATE that keeps its group has one key even if the primary key changed.
    expect(keys(change('UPDATE', line(6, '1'), line(5, '1')))).to.deep.equal(from);
    // Without the old image (not REPLICA IDENTITY FULL), only the new group is known.
    expect(keys(change('UPDATE', line(5, '2'), null))).to.deep.equal(to);
  });

  it('several columns: every column counts, in the order given', () => {
    const by = ['account_id', 'currency'];
    const eur = keys(change('INSERT', line(1, '7', '"EUR"')), by);
    expect(keys(change('INSERT', line(2, '7', '"EUR"', '5')), by)).to.deep.equal(eur);
    expect(keys(change('INSERT', line(1, '7', '"USD"')), by)).not.to.deep.equal(eur);
    expect(keys(change('INSERT', line(1, '7', '"EUR"')), ['currency', 'account_id'])).not.to.deep.equal(eur);
    // A currency change moves the line between two groups of the account.
    expect(keys(change('UPDATE', line(1, '7', '"USD"'), line(1, '7', '"EUR"')), by)).to.have.length(2);
  });

  it('NULL is a group of its own: rows without an account share it, and it is not the text "null"', () => {
    const none = keys(change('INSERT', line(1, 'null')));
    expect(keys(change('INSERT', line(2, 'null')))).to.deep.equal(none);
    expect(keys(change('INSERT', line(1, '"null"')))).not.to.deep.equal(none);
    expect(keys(change('INSERT', line(1, '0')))).not.to.deep.equal(none);
    // Moving a row out of the NULL group orders it under both.
    expect(keys(change('UPDATE', line(1, '3'), line(1, 'null')))).to.deep.equal([...keys(change('INSERT', line(1, '3')))!, ...none!]);
  });

  it('values are typed and cannot run into each other', () => {
    expect(keys(change('INSERT', line(1, '1')))).not.to.deep.equal(keys(change('INSERT', line(1, '"1"'))));
    const two = (a: string, b: string) => keys(change('INSERT', row({ a: JSON.stringify(a), b: JSON.stringify(b) })), ['a', 'b'])![0];
    const all = [two('a,b', 'c'), two('a', 'b,c'), two('a","b', 'c'), two('a', '","b'), two('', 'ab'), two('ab', '')];
    expect(new Set(all).size).to.equal(all.length);
  });

  it('a group never meets a row, another table, another column set or another subscription', () => {
    const r = row({ id: '1' });
    const asGroup = groupIdentity('s', 't', r, ['id'])!;
    expect(asGroup).not.to.equal(rowIdentity('s', 't', r, [0]));
    expect(groupIdentity('s', 'u', r, ['id'])).not.to.equal(asGroup);
    const both = row({ a: '1', b: '1' });
    expect(groupIdentity('s', 't', both, ['a'])).not.to.equal(groupIdentity('s', 't', both, ['b']));
    expect(orderKey('wh_a', asGroup)).not.to.equal(orderKey('wh_b', asGroup));
    expect(orderKey('wh_a', asGroup)).to.match(/^[A-Za-z0-9_-]{43}$/);
  });

  it('a group column the row lacks (dropped since): no keys, the change is unordered', () => {
    expect(keys(change('INSERT', line(1, '7')), ['branch_id'])).to.equal(null);
    expect(keys(change('INSERT', line(1, '7')), ['account_id', 'branch_id'])).to.equal(null);
    // A TRUNCATE has no row: unordered, as with row ordering.
    expect(keys(change('TRUNCATE', row({})))).to.equal(null);
  });
});

describe('unit: which deliveries carry group keys', () => {
  const spec = (id: string, over: Partial<SubscriptionSpec> = {}): SubscriptionSpec => ({
    id,
    projectId: 'bank',
    environment: 'master',
    schema: 'bank_master',
    table: 'ledger',
    events: ['INSERT', 'UPDATE', 'DELETE'],
    active: true,
    filter: null,
    select: null,
    ordering: 'none',
    orderingBy: null,
    ...over,
  });

  it("each subscription's delivery carries its own keys: groups by its own columns, rows by the primary key", () => {
    const subs = [
      spec('wh_plain'),
      spec('wh_rows', { ordering: 'row' }),
      spec('wh_accounts', { ordering: 'group', orderingBy: ['account_id'] }),
      spec('wh_currencies', { ordering: 'group', orderingBy: ['currency'] }),
    ];
    const moved = change('UPDATE', line(1, '2'), line(1, '1'));
    const delivered = matchDeliveries(subs, moved, ['row-1']);
    expect(delivered.map((d) => [d.webhookId, d.orderKeys])).to.deep.equal([
      ['wh_plain', null],
      ['wh_rows', [orderKey('wh_rows', 'row-1')]],
      ['wh_accounts', keys(moved, ['account_id'], 'wh_accounts')],
      ['wh_currencies', keys(moved, ['currency'], 'wh_currencies')],
    ]);
    expect(delivered[2]!.orderKeys).to.have.length(2);
    expect(delivered[3]!.orderKeys).to.have.length(1);
    // A table without a primary key: row ordering is off, group ordering is not.
    const noKey = matchDeliveries(subs, moved, null);
    expect(noKey.map((d) => d.orderKeys === null)).to.deep.equal([true, true, false, false]);
  });

  it('a backfilled row (READ) waits its turn in its group', () => {
    const sub = spec('wh_accounts', { ordering: 'group', orderingBy: ['account_id'] });
    const read = { ...change('INSERT', line(1, '7')), operation: 'READ' as const };
    expect(readDelivery(sub, read, ['row-1']).orderKeys).to.deep.equal(keys(change('INSERT', line(1, '7')), BY_ACCOUNT, 'wh_accounts'));
  });

  it('a stored ordering reads back as it was saved; anything malformed (older saved views included) is "none"', () => {
    expect(specOrdering('group', ['account_id', 'currency'])).to.deep.equal({ ordering: 'group', orderingBy: ['account_id', 'currency'] });
    expect(specOrdering('row', null)).to.deep.equal({ ordering: 'row', orderingBy: null });
    for (const [o, by] of [
      [undefined, undefined],
      ['none', null],
      ['group', null],
      ['group', []],
      ['group', [1]],
      ['sideways', ['a']],
    ]) {
      expect(specOrdering(o, by), JSON.stringify([o, by])).to.deep.equal({ ordering: 'none', orderingBy: null });
    }
  });
});
