import type { Change } from './events.js';
import { decodeRow, type Relation } from './decode.js';
import type { RawTuple } from './pgoutput.js';
import type { SubscriptionSpec, SubscriptionView } from './subscriptions.js';

// Auth events reach subscribers as changes of a table named `_auth_events` in their environment.
// The rows live in one table of walgate's own schema, keyed by environment, captured from the WAL
// like any other (the publication has it from the start); here a row is matched to the
// subscriptions of its own environment, and named as they know it. The tailer reads no other
// column of it and knows nothing else of auth.

/** The table name subscriptions use. */
export const AUTH_EVENTS_TABLE = '_auth_events';

/** Where the rows really are. */
export const AUTH_EVENTS_SOURCE = { schema: 'walgate', table: 'auth_events' } as const;

export function isAuthEventsRelation(rel: { schema: string; name: string }): boolean {
  return rel.schema === AUTH_EVENTS_SOURCE.schema && rel.name === AUTH_EVENTS_SOURCE.table;
}

/** The subscriptions of the row's environment on `_auth_events`. */
export function authEventSubscriptions(view: SubscriptionView, rel: Relation, tuple: RawTuple): readonly SubscriptionSpec[] {
  if (!view.watchesTableByName(AUTH_EVENTS_TABLE)) return [];
  const { row } = decodeRow(rel, tuple);
  const value = (column: string) => JSON.parse(row.fragments[row.indexOf.get(column) ?? -1] ?? 'null') as string;
  return view.forEnvironmentTable(value('project_id'), value('environment'), AUTH_EVENTS_TABLE);
}

/** The change as its subscribers name it: `_auth_events` in their environment's schema. */
export function asAuthEvent(change: Change, subs: readonly SubscriptionSpec[]): void {
  change.schema = subs[0]!.schema;
  change.table = AUTH_EVENTS_TABLE;
}
