import { expect } from 'chai';
import { matchDeliveries, type Change } from '../../../src/tailer/events.js';
import { matchesFilter, type Row } from '../../../src/tailer/match.js';
import { orderKey } from '../../../src/tailer/order-keys.js';
import type { SubscriptionSpec } from '../../../src/tailer/subscriptions.js';

// Which subscriptions take a change: active, the event kind chosen, every filter field equal to
// the row's value. Rows hold each column as the JSON fragment the payload will carry.

function row(values: Record<string, string>): Row {
  const names = Object.keys(values);
  return { names, fragments: names.map((n) => values[n]!), indexOf: new Map(names.map((n, i) => [n, i])) };
}

const ORDER = row({ id: '9007199254740993', status: '"paid"', total: '10.00', rush: 'true', note: 'null', tags: '["a"]' });

describe('unit: filter matching', () => {
  const matches = (filter: Record<string, unknown> | null, r: Row = ORDER) => matchesFilter(filter, r);

  it('no filter, or an empty one, takes every row', () => {
    expect(matches(null)).to.equal(true);
    expect(matches({})).to.equal(true);
  });

  it('strings match the same string only', () => {
    expect(matches({ status: 'paid' })).to.equal(true);
    expect(matches({ status: 'Paid' })).to.equal(false);
    expect(matches({ status: 'paid ' })).to.equal(false);
    expect(matches({ total: '10.00' })).to.equal(false); // a string never equals a number column
  });

  it('numbers compare by value, with every digit', () => {
    expect(matches({ total: 10 })).to.equal(true);
    expect(matches({ total: 10.0 })).to.equal(true);
    expect(matches({ total: 10.01 })).to.equal(false);
    expect(matches({ total: 1 })).to.equal(false);
    expect(matches({ status: 10 })).to.equal(false);
    expect(matchesFilter({ id: 9007199254740992 }, ORDER)).to.equal(false); // 2^53 is not 2^53 + 1
    expect(matchesFilter({ x: -0.5 }, row({ x: '-0.50' }))).to.equal(true);
    expect(matchesFilter({ x: 0 }, row({ x: '-0' }))).to.equal(true);
    expect(matchesFilter({ x: 1e21 }, row({ x: '1000000000000000000000' }))).to.equal(true);
  });

  it('booleans and null match themselves only', () => {
    expect(matches({ rush: true })).to.equal(true);
    expect(matches({ rush: false })).to.equal(false);
    expect(matches({ rush: 'true' })).to.equal(false);
    expect(matches({ note: null })).to.equal(true);
    expect(matches({ status: null })).to.equal(false);
  });

  it('every field must match; a column the table lacks never matches', () => {
    expect(matches({ status: 'paid', rush: true, total: 10 })).to.equal(true);
    expect(matches({ status: 'paid', rush: false })).to.equal(false);
    expect(matches({ missing: null })).to.equal(false);
  });

  it('objects and arrays are not equality values (never match)', () => {
    expect(matches({ tags: ['a'] })).to.equal(false);
    expect(matches({ status: { eq: 'paid' } })).to.equal(false);
  });
});

describe('unit: which subscriptions take a change', () => {
  const spec = (id: string, over: Partial<SubscriptionSpec> = {}): SubscriptionSpec => ({
    id,
    projectId: 'proj_1',
    environment: 'production',
    schema: 'public',
    table: 'orders',
    events: ['INSERT', 'UPDATE', 'DELETE'],
    active: true,
    filter: null,
    select: null,
    ordering: 'none',
    orderingBy: null,
    ...over,
  });
  const change = (operation: Change['operation'], record: Row = ORDER): Change => ({
    eventId: 'evt_0000000001A2B3C4_000007',
    operation,
    schema: 'public',
    table: 'orders',
    committedAt: new Date('2026-01-02T03:04:05.678Z'),
    record,
    old: null,
    changedFields: [],
  });

  it('takes active subscriptions whose events and filter fit, with their selection, one delivery each', () => {
    const subs = [
      spec('wh_all'),
      spec('wh_paused', { active: false }),
      spec('wh_inserts', { events: ['INSERT'] }),
      spec('wh_paid', { filter: { status: 'paid' }, select: ['id', 'status'] }),
      spec('wh_unpaid', { filter: { status: 'open' } }),
    ];
    expect(matchDeliveries(subs, change('UPDATE'))).to.deep.equal([
      {
        id: 'del_0000000001A2B3C4_000007_all',
        webhookId: 'wh_all',
        eventId: 'evt_0000000001A2B3C4_000007',
        eventType: 'UPDATE',
        select: null,
        orderKeys: null,
      },
      {
        id: 'del_0000000001A2B3C4_000007_paid',
        webhookId: 'wh_paid',
        eventId: 'evt_0000000001A2B3C4_000007',
        eventType: 'UPDATE',
        select: ['id', 'status'],
        orderKeys: null,
      },
    ]);
    expect(matchDeliveries(subs, change('INSERT')).map((d) => d.webhookId)).to.deep.equal(['wh_all', 'wh_inserts', 'wh_paid']);
  });

  it('a DELETE is filtered on the row as it was', () => {
    const subs = [spec('wh_paid', { filter: { status: 'paid' } })];
    expect(matchDeliveries(subs, change('DELETE'))).to.have.length(1);
    expect(matchDeliveries(subs, change('DELETE', row({ status: '"open"' })))).to.have.length(0);
  });

  it("only the deliveries of row-ordered subscriptions carry order keys: their own keys of the change's rows", () => {
    const subs = [spec('wh_plain'), spec('wh_rows', { ordering: 'row' }), spec('wh_rows_too', { ordering: 'row' })];
    const delivered = matchDeliveries(subs, change('UPDATE'), ['row-new', 'row-old']);
    expect(delivered.map((d) => [d.webhookId, d.orderKeys])).to.deep.equal([
      ['wh_plain', null],
      ['wh_rows', [orderKey('wh_rows', 'row-new'), orderKey('wh_rows', 'row-old')]],
      ['wh_rows_too', [orderKey('wh_rows_too', 'row-new'), orderKey('wh_rows_too', 'row-old')]],
    ]);
    // No rows (a table without a primary key): unordered.
    expect(matchDeliveries(subs, change('UPDATE'), null).every((d) => d.orderKeys === null)).to.equal(true);
  });
});
