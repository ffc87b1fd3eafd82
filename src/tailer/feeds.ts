import type { Change } from './events.js';
import { decodeRow, type Relation } from './decode.js';
import type { RawTuple } from './pgoutput.js';
import type { SubscriptionSpec, SubscriptionView } from './subscriptions.js';

// Feeds: walgate's own tables that subscribers see as a table of their environment — auth events
// as `_auth_events`, operational events as `_operations`. The rows of each live in one table of
// walgate's own schema, keyed by environment, captured from the WAL like any other (the
// publication has them from their migrations on); here a row is matched to the subscriptions of
// its own environment only, and named as they know it. The tailer reads no other column of them.

/** The table names subscriptions use. */
export const AUTH_EVENTS_TABLE = '_auth_events';
export const OPERATIONS_TABLE = '_operations';

/** Where each feed's rows really are. */
const SOURCES = {
  [AUTH_EVENTS_TABLE]: { schema: 'walgate', table: 'auth_events' },
  [OPERATIONS_TABLE]: { schema: 'walgate', table: 'operations' },
} as const;

export type Feed = keyof typeof SOURCES;

export function isFeed(table: string): table is Feed {
  return Object.hasOwn(SOURCES, table);
}

export function feedSource(feed: Feed): { schema: string; table: string } {
  return SOURCES[feed];
}

/** The feed whose rows this relation holds; undefined for any other relation. */
export function feedOf(rel: { schema: string; name: string }): Feed | undefined {
  if (rel.schema !== 'walgate') return undefined;
  if (rel.name === SOURCES[AUTH_EVENTS_TABLE].table) return AUTH_EVENTS_TABLE;
  if (rel.name === SOURCES[OPERATIONS_TABLE].table) return OPERATIONS_TABLE;
  return undefined;
}

/** The subscriptions of the row's environment on the feed. */
export function feedSubscriptions(view: SubscriptionView, feed: Feed, rel: Relation, tuple: RawTuple): readonly SubscriptionSpec[] {
  if (!view.watchesTableByName(feed)) return [];
  const { row } = decodeRow(rel, tuple);
  const value = (column: string) => JSON.parse(row.fragments[row.indexOf.get(column) ?? -1] ?? 'null') as string;
  return view.forEnvironmentTable(value('project_id'), value('environment'), feed);
}

/** A feed's change as its subscribers name it: the feed's table in their environment's schema. Any other change stays as it is. */
export function asFeedChange(change: Change, rel: { schema: string; name: string }, subs: readonly SubscriptionSpec[]): void {
  const feed = feedOf(rel);
  if (!feed) return;
  change.schema = subs[0]!.schema;
  change.table = feed;
}
