import type { Violation } from '../core/errors.js';
import { ON_DEAD_NEEDS_ORDER } from './schemas.js';
import type { WebhookRow } from './store.js';
import type { TableColumn } from './validation.js';

// A subscription's `ordering` as the API speaks it — "none", "row" or {by: [columns]} — and as
// walgate.webhooks stores it: `ordering` ('none' | 'row' | 'group') and the group's columns in
// `ordering_by` (sql/076). The tailer turns either kind into order keys (tailer/order-keys.ts).

export type Ordering = 'none' | 'row' | { by: string[] };

type StoredOrdering = Pick<WebhookRow, 'ordering' | 'orderingBy'>;

/** The API's form of a stored ordering; the group's columns as they were sent. */
export function orderingOf(w: StoredOrdering): Ordering {
  return w.ordering === 'group' ? { by: [...(w.orderingBy ?? [])] } : w.ordering;
}

export function storedOrdering(o: Ordering): StoredOrdering {
  return typeof o === 'string' ? { ordering: o, orderingBy: null } : { ordering: 'group', orderingBy: [...o.by] };
}

/**
 * A PATCH's ordering and onDead: what the body names, else what the subscription has — except
 * that an unordered subscription holds nothing, so onDead goes back to "skip" with `"none"`
 * unless the body asks for "hold" (then refused). `rowOrdered`: the table must have a primary
 * key — checked when the body asks for "row" or moves a row-ordered subscription to another
 * table, not on every PATCH of one whose table lost its key since (its deliveries then go
 * unordered, tailer/order-keys.ts). A group's columns are checked on every PATCH, as filter and
 * select are (groupViolations): one dropped since is reported in `problems`, and a PATCH is
 * refused until the ordering names columns the table has.
 */
export function patchedOrdering(
  body: { ordering?: Ordering; onDead?: WebhookRow['onDead']; table?: string },
  locked: Pick<WebhookRow, 'ordering' | 'orderingBy' | 'onDead' | 'table'>,
): { ordering: Ordering; onDead: WebhookRow['onDead']; rowOrdered: boolean; violations: Violation[] } {
  const ordering = body.ordering ?? orderingOf(locked);
  const rowOrdered = body.ordering === 'row' || (ordering === 'row' && body.table !== undefined && body.table !== locked.table);
  const onDead = body.onDead ?? (ordering !== 'none' ? locked.onDead : 'skip');
  const violations = onDead === 'hold' && ordering === 'none' ? [{ path: 'onDead', message: ON_DEAD_NEEDS_ORDER }] : [];
  return { ordering, onDead, rowOrdered, violations };
}

/**
 * What the ordering asks of the table: a group's columns must be columns of it (the shape — 1 to
 * 8, no repeats — was checked with the body, schemas.ts). `row` needs a primary key, which the
 * caller checks (it takes a catalog read): this names only what the columns decide.
 */
export function groupViolations(o: Ordering, columns: readonly TableColumn[]): Violation[] {
  if (typeof o === 'string') return [];
  const known = new Set(columns.map((c) => c.name));
  return o.by.flatMap((column, i) =>
    known.has(column) ? [] : [{ path: `ordering.by.${i}`, message: `${JSON.stringify(column)} is not a column of the table` }],
  );
}

/** The group columns a table no longer has (a column dropped since the subscription was saved). */
export function missingGroupColumns(w: StoredOrdering, columns: readonly string[]): string[] {
  if (w.ordering !== 'group') return [];
  const known = new Set(columns);
  return (w.orderingBy ?? []).filter((c) => !known.has(c));
}
