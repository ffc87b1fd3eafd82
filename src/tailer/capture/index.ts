// Change capture as the rest of walgate sees it: which tables are captured, and that changes are
// retained from the first subscription on (the webhook service calls only these; the publication,
// replica identity and slot behind them are the tailer's business); and what a captured change is
// and where it goes (the delivery engine implements DeliverySink). The tailer reads the WAL,
// matches each change to the subscriptions as they stood at its commit, and hands the matches on.
import type { Queryable } from '../../core/db/pool.js';
import { lockPublication, unwatchTable, watchTable } from '../publication.js';
import { ensureSlot } from '../slot.js';
import { AUTH_EVENTS_TABLE, feedSource, isFeed, OPERATIONS_TABLE } from '../feeds.js';
import { MESSAGES_TABLE } from '../messages.js';

export { AUTH_EVENTS_TABLE, isFeed, MESSAGES_TABLE, OPERATIONS_TABLE };

/**
 * The columns of a table name that is no table (`_messages`: outbox messages, tailer/messages.ts),
 * with the types their values have; undefined for a real table name.
 */
export function messageColumns(table: string): Array<{ name: string; type: string }> | undefined {
  return table === MESSAGES_TABLE
    ? [
        { name: 'prefix', type: 'text' },
        { name: 'content', type: 'jsonb' },
      ]
    : undefined;
}

/** Where a subscription's table really is: a feed (`_auth_events`, `_operations`) is walgate's own table (tailer/feeds.ts), any other the environment's. */
export function capturedRelation(schema: string, table: string): { schema: string; table: string } {
  return isFeed(table) ? feedSource(table) : { schema, table };
}

export { WatchError as CaptureError } from '../publication.js';

/**
 * Serializes changes to the set of captured tables. Call it first in a transaction that may start
 * or stop capturing a table, before deciding whether a table is still in use.
 */
export const lockCapturedTables = (db: Queryable): Promise<void> => lockPublication(db);

/** Captures a table's changes from this transaction's commit on, with its old rows (replica identity full). */
export const captureTable = (db: Queryable, schema: string, table: string): Promise<void> =>
  // Feeds are in the publication from their migrations on; messages are not published per table.
  isFeed(table) || table === MESSAGES_TABLE ? Promise.resolve() : watchTable(db, schema, table);

/** Stops capturing a table that no subscription watches any more. */
export const releaseTable = (db: Queryable, schema: string, table: string): Promise<void> =>
  isFeed(table) || table === MESSAGES_TABLE ? Promise.resolve() : unwatchTable(db, schema, table);

/** Makes Postgres retain changes from now on, even before any tailer runs (creates the slot when missing). */
export async function retainChanges(db: Queryable): Promise<void> {
  await ensureSlot(db);
}

export type { CapturedDelivery, CapturedEvent, DeliverySink, DeliveryStream, Operation } from '../sink.js';

export { acknowledgeGap, listGaps, openGapCount, type CaptureGap } from '../gaps.js';

// Backfills (tailer/backfill/): the webhook service creates, lists and cancels them; the tailer runs them.
export {
  backfillView,
  cancelBackfill,
  getBackfill,
  insertBackfill,
  listBackfills,
  runningBackfillOf,
  type Backfill,
  type BackfillState,
} from '../backfill/store.js';
export { describeBackfillTable, estimateRows, lastSortKey, probeKeyset } from '../backfill/page.js';

// The filter language (docs/filters.md): the api reads and checks documents with the same reader
// the tailer compiles them with.
export { FILTER_LIMITS, COLUMN_OPERATORS, DOCUMENT_OPERATORS, filterColumns, parseFilter, type FilterIssue } from '../filter/language.js';
export { kindOfBaseType, type ValueKind } from '../filter/kinds.js';
