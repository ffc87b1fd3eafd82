import { lsnHex, type Lsn } from './lsn.js';
import { matchesFilter, rowJson, type Row } from './match.js';
import type { SubscriptionSpec } from './subscriptions.js';

export type Operation = 'INSERT' | 'UPDATE' | 'DELETE';

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

/** A delivery to write: one subscription's copy of one event, with the exact body to send. */
export interface DeliveryRow {
  id: string;
  webhookId: string;
  eventId: string;
  eventType: Operation;
  payload: string;
  committedAt: Date;
}

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
  // The filter looks at the new row, or at the deleted row for DELETE (record holds it then).
  return matchesFilter(sub.filter, change.record);
}

/** The delivery body: the seed's payload plus `old_record`, with `select` applied to every image. */
export function buildPayload(sub: SubscriptionSpec, change: Change): string {
  const record = rowJson(change.record, sub.select);
  const old = change.old ? rowJson(change.old, sub.select) : 'null';
  const changed = sub.select ? change.changedFields.filter((f) => sub.select!.includes(f)) : change.changedFields;
  return (
    `{"id":${JSON.stringify(change.eventId)}` +
    `,"timestamp":${JSON.stringify(change.committedAt.toISOString())}` +
    `,"project_id":${JSON.stringify(sub.projectId)}` +
    `,"environment":${JSON.stringify(sub.environment)}` +
    `,"table":${JSON.stringify(change.table)}` +
    `,"event":"${change.operation}"` +
    `,"record":${record},"data":${record},"old_record":${old}` +
    `,"changed_fields":${JSON.stringify(changed)}}`
  );
}

export function deliveriesFor(subs: readonly SubscriptionSpec[], change: Change): DeliveryRow[] {
  const rows: DeliveryRow[] = [];
  for (const sub of subs) {
    if (!wants(sub, change)) continue;
    rows.push({
      id: deliveryId(sub.id, change.eventId),
      webhookId: sub.id,
      eventId: change.eventId,
      eventType: change.operation,
      payload: buildPayload(sub, change),
      committedAt: change.committedAt,
    });
  }
  return rows;
}
