import { lsnHex, type Lsn } from './lsn.js';
import { matchesFilter, type Row } from './match.js';
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

/** An event as stored (walgate.events): the images as one JSON fragment per column. */
export interface EventRecord {
  id: string;
  schema: string;
  table: string;
  operation: Operation;
  committedAt: Date;
  columns: string[];
  record: string[];
  old: string[] | null;
  changedFields: string[];
}

/** One subscription's copy of an event (walgate.deliveries). */
export interface DeliveryRecord {
  id: string;
  webhookId: string;
  eventId: string;
  eventType: Operation;
  /** The subscription's `select` when the change was matched: the body is rendered with it. */
  select: string[] | null;
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

export function matchDeliveries(subs: readonly SubscriptionSpec[], change: Change): DeliveryRecord[] {
  const out: DeliveryRecord[] = [];
  for (const sub of subs) {
    if (!wants(sub, change)) continue;
    out.push({ id: deliveryId(sub.id, change.eventId), webhookId: sub.id, eventId: change.eventId, eventType: change.operation, select: sub.select });
  }
  return out;
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

function objectJson(columns: readonly string[], fragments: readonly string[], select: readonly string[] | null): string {
  const parts: string[] = [];
  for (let i = 0; i < columns.length; i++) {
    if (select && !select.includes(columns[i]!)) continue;
    parts.push(`${JSON.stringify(columns[i])}:${fragments[i]}`);
  }
  return `{${parts.join(',')}}`;
}

/**
 * The delivery body: the seed's payload plus `old_record`, with `select` applied to every image.
 * Deterministic: the same event, subscription and selection give the same bytes on every attempt.
 */
export function buildPayload(target: { projectId: string; environment: string; select: readonly string[] | null }, event: EventRecord): string {
  const { select } = target;
  const record = objectJson(event.columns, event.record, select);
  const old = event.old ? objectJson(event.columns, event.old, select) : 'null';
  const changed = select ? event.changedFields.filter((f) => select.includes(f)) : event.changedFields;
  return (
    `{"id":${JSON.stringify(event.id)}` +
    `,"timestamp":${JSON.stringify(event.committedAt.toISOString())}` +
    `,"project_id":${JSON.stringify(target.projectId)}` +
    `,"environment":${JSON.stringify(target.environment)}` +
    `,"table":${JSON.stringify(event.table)}` +
    `,"event":"${event.operation}"` +
    `,"record":${record},"data":${record},"old_record":${old}` +
    `,"changed_fields":${JSON.stringify(changed)}}`
  );
}
