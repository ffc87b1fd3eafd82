import type { CapturedDelivery, CapturedEvent, Operation } from './sink.js';
import { lsnHex, type Lsn } from './lsn.js';
import { filterMatches, type Row } from './match.js';
import { changeGroups, orderKey } from './order-keys.js';
import type { SubscriptionSpec } from './subscriptions.js';

export type { Operation };

/** One decoded data change, with its before and after images. */
export interface Change {
  eventId: string;
  operation: Operation;
  schema: string;
  table: string;
  committedAt: Date;
  /** The row after the change; for DELETE the row as it was. */
  record: Row;
  /** The row before the change (UPDATE, DELETE), when the table's replica identity provides it. */
  old: Row | null;
  changedFields: string[];
}

export type EventRecord = CapturedEvent;

export type DeliveryRecord = CapturedDelivery;

/**
 * Event ids come from the WAL position — the transaction's commit LSN and the change's place in
 * it — so a change read again after a crash carries the id it had the first time.
 */
export function eventId(commitLsn: Lsn, index: number): string {
  return `evt_${lsnHex(commitLsn)}_${index.toString().padStart(6, '0')}`;
}

/**
 * A delivery's id is made of its event and its subscription, so writing the same pair twice (a
 * change re-read after a crash) hits the primary key and keeps the first row.
 */
export function deliveryId(webhookId: string, eventId: string): string {
  return `del_${eventId.slice(4)}_${webhookId.replace(/^wh_/, '')}`;
}

/** Whether a subscription takes this change: active, the event kind chosen, the filter met. */
export function wants(sub: SubscriptionSpec, change: Change): boolean {
  if (!sub.active || !sub.events.includes(change.operation)) return false;
  // A truncate empties the whole table, whatever rows the filter selects: every taker must know.
  if (change.operation === 'TRUNCATE') return true;
  // Row conditions look at the new row, or at the deleted row for DELETE (record holds it then);
  // `$old` and the change operators at the row before (filter/compile.ts).
  return filterMatches(sub.filter, change);
}

/**
 * The order keys a subscription's delivery of the change carries: with 'row' those of `rows`
 * (the change's row identities, null without a primary key), with 'group' those of the change's
 * groups under the subscription's own columns (null when the table lacks one); null = unordered.
 */
function orderKeysFor(sub: SubscriptionSpec, change: Change, rows: readonly string[] | null): string[] | null {
  const identities = sub.ordering === 'row' ? rows : sub.ordering === 'group' ? changeGroups(change, sub.orderingBy ?? []) : null;
  return identities ? identities.map((identity) => orderKey(sub.id, identity)) : null;
}

/** `rows`: the row identities the change orders with (order-keys.ts): row-ordered subscriptions' deliveries carry their keys. */
export function matchDeliveries(subs: readonly SubscriptionSpec[], change: Change, rows: string[] | null = null): DeliveryRecord[] {
  const out: DeliveryRecord[] = [];
  for (const sub of subs) {
    if (!wants(sub, change)) continue;
    out.push({
      id: deliveryId(sub.id, change.eventId),
      webhookId: sub.id,
      eventId: change.eventId,
      eventType: change.operation,
      select: sub.select,
      orderKeys: orderKeysFor(sub, change, rows),
    });
  }
  return out;
}

/**
 * A backfilled row's delivery (tailer/backfill/): to the one subscription that asked, whatever its
 * `events` say; `rows`: the row's identity, so that with `ordering: "row"` (or its group's, with a
 * group) it waits its turn.
 */
export function readDelivery(sub: SubscriptionSpec, change: Change, rows: readonly string[]): DeliveryRecord {
  return {
    id: deliveryId(sub.id, change.eventId),
    webhookId: sub.id,
    eventId: change.eventId,
    eventType: 'READ',
    select: sub.select,
    orderKeys: orderKeysFor(sub, change, rows),
  };
}

/** A TRUNCATE of a watched table: an event without rows (`record` empty, no old image). */
export function truncateChange(eventId: string, committedAt: Date, schema: string, table: string): Change {
  const empty: Row = { names: [], fragments: [], indexOf: new Map() };
  return { eventId, operation: 'TRUNCATE', schema, table, committedAt, record: empty, old: null, changedFields: [] };
}

export function toEventRecord(change: Change): EventRecord {
  return {
    id: change.eventId,
    schema: change.schema,
    table: change.table,
    operation: change.operation,
    committedAt: change.committedAt,
    columns: [...change.record.names],
    record: [...change.record.fragments],
    old: change.old ? [...change.old.fragments] : null,
    changedFields: change.changedFields,
  };
}
