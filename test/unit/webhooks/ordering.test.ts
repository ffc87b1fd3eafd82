import { expect } from 'chai';
import {
  groupViolations,
  missingGroupColumns,
  orderingOf,
  patchedOrdering,
  storedOrdering,
  type Ordering,
} from '../../../src/webhooks/ordering.js';
import type { TableColumn } from '../../../src/webhooks/validation.js';

// A subscription's `ordering` between the API's form ("none" | "row" | {by}) and its columns
// (ordering, ordering_by), and what a PATCH makes of it and of onDead.

describe('unit: webhook ordering rules', () => {
  const columns: TableColumn[] = ['id', 'account_id', 'currency'].map((name) => ({ name, kind: 'text' }));

  it('stores and reads back each kind; a group keeps its columns in the order sent', () => {
    const kinds: Ordering[] = ['none', 'row', { by: ['currency', 'account_id'] }];
    for (const o of kinds) {
      expect(orderingOf(storedOrdering(o))).to.deep.equal(o);
    }
    expect(storedOrdering({ by: ['account_id'] })).to.deep.equal({ ordering: 'group', orderingBy: ['account_id'] });
    expect(storedOrdering('row')).to.deep.equal({ ordering: 'row', orderingBy: null });
  });

  it('names each group column the table lacks by its place; row and none ask nothing of the columns', () => {
    expect(groupViolations({ by: ['account_id', 'branch', 'currency', 'desk'] }, columns)).to.deep.equal([
      { path: 'ordering.by.1', message: '"branch" is not a column of the table' },
      { path: 'ordering.by.3', message: '"desk" is not a column of the table' },
    ]);
    expect(groupViolations({ by: ['account_id'] }, columns)).to.deep.equal([]);
    expect(groupViolations('row', [])).to.deep.equal([]);
    expect(missingGroupColumns({ ordering: 'group', orderingBy: ['account_id', 'branch'] }, ['id', 'account_id'])).to.deep.equal([
      'branch',
    ]);
    expect(missingGroupColumns({ ordering: 'row', orderingBy: null }, [])).to.deep.equal([]);
  });

  it('a PATCH keeps what it does not name; unordered, onDead goes back to "skip", and "hold" is refused', () => {
    const group = { ordering: 'group' as const, orderingBy: ['account_id'], onDead: 'hold' as const, table: 'ledger' };
    expect(patchedOrdering({}, group)).to.deep.equal({
      ordering: { by: ['account_id'] },
      onDead: 'hold',
      rowOrdered: false,
      violations: [],
    });
    expect(patchedOrdering({ ordering: 'row' }, group)).to.deep.include({ ordering: 'row', onDead: 'hold', rowOrdered: true });
    expect(patchedOrdering({ ordering: 'none' }, group)).to.deep.include({ ordering: 'none', onDead: 'skip', violations: [] });
    expect(patchedOrdering({ ordering: 'none', onDead: 'hold' }, group).violations.map((v) => v.path)).to.deep.equal(['onDead']);
    // A row-ordered subscription moved to another table: the new table's key is checked.
    const row = { ...group, ordering: 'row' as const, orderingBy: null };
    expect(patchedOrdering({ table: 'other' }, row).rowOrdered).to.equal(true);
    expect(patchedOrdering({ table: 'other' }, group).rowOrdered).to.equal(false);
  });
});
