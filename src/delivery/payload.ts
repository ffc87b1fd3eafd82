import type { CapturedEvent, Operation } from '../tailer/sink.js';
import { isTestEvent } from './custom-headers.js';

// A delivery's body, rendered from its event, its subscription and the selection it was matched
// with. Deterministic: the same event, subscription and selection give the same bytes on every
// attempt. Parked deliveries keep their event in walgate.events; any reader of them selects
// PAYLOAD_COLUMNS from
//   walgate.deliveries d JOIN walgate.events e ON e.id = d.event_id JOIN walgate.webhooks w ON w.id = d.webhook_id

export interface PayloadTarget {
  projectId: string;
  environment: string;
  select: readonly string[] | null;
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
 * The seed's payload plus `old_record`, with `select` applied to every image, and
 * `previous_event_id`: for a row-ordered subscription the id of the row's change it was handed
 * before this one (tailer/previous-events.ts), null when not known or not ordered.
 */
export function buildPayload(target: PayloadTarget, event: CapturedEvent, previousEventId: string | null = null): string {
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
    `,"changed_fields":${JSON.stringify(changed)}` +
    `,"previous_event_id":${previousEventId === null ? 'null' : JSON.stringify(previousEventId)}` +
    // A test event (POST …/{id}/test) says so, so a receiver can tell it from a real change.
    `${isTestEvent(event.id) ? ',"test":true' : ''}}`
  );
}

// The arrays travel as JSON: JSON.parse reads them several times faster than the text[] parser.
export const PAYLOAD_COLUMNS = `e.id AS event_id, e.schema_name, e.table_name, e.operation, e.committed_at, to_json(e.columns) AS columns,
  to_json(e.record) AS record, to_json(e.old_record) AS old_record, to_json(e.changed_fields) AS changed_fields,
  w.project_id, w.environment, d.select_fields, d.previous_event_id`;

export interface PayloadRow {
  event_id: string;
  schema_name: string;
  table_name: string;
  operation: Operation;
  committed_at: Date;
  columns: string[];
  record: string[];
  old_record: string[] | null;
  changed_fields: string[];
  project_id: string;
  environment: string;
  select_fields: string[] | null;
  previous_event_id: string | null;
}

export function eventOf(r: PayloadRow): CapturedEvent {
  return {
    id: r.event_id,
    schema: r.schema_name,
    table: r.table_name,
    operation: r.operation,
    committedAt: r.committed_at,
    columns: r.columns,
    record: r.record,
    old: r.old_record,
    changedFields: r.changed_fields,
  };
}

export function renderPayload(r: PayloadRow): string {
  return buildPayload({ projectId: r.project_id, environment: r.environment, select: r.select_fields }, eventOf(r), r.previous_event_id);
}
