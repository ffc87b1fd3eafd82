import { buildPayload, type EventRecord, type Operation } from '../tailer/events.js';

// Rendering a delivery's body from its event, its subscription and the selection it was matched
// with. Any reader of deliveries selects PAYLOAD_COLUMNS from
//   walgate.deliveries d JOIN walgate.events e ON e.id = d.event_id JOIN walgate.webhooks w ON w.id = d.webhook_id

// The arrays travel as JSON: JSON.parse reads them several times faster than the text[] parser.
export const PAYLOAD_COLUMNS = `e.id AS event_id, e.schema_name, e.table_name, e.operation, e.committed_at, to_json(e.columns) AS columns,
  to_json(e.record) AS record, to_json(e.old_record) AS old_record, to_json(e.changed_fields) AS changed_fields,
  w.project_id, w.environment, d.select_fields`;

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
}

export function eventOf(r: PayloadRow): EventRecord {
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
  return buildPayload({ projectId: r.project_id, environment: r.environment, select: r.select_fields }, eventOf(r));
}
