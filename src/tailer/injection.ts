import type { Change, DeliveryRecord } from './events.js';
import { readDelivery } from './events.js';
import { filterMatches } from './match.js';
import type { SubscriptionSpec } from './subscriptions.js';

// Rows that walgate itself hands into the stream at the place of one of its own logical messages:
// a backfill page, at its high watermark (tailer/backfill/). The session numbers them after the
// message in its transaction, so their event ids sort after every change committed before and
// before every change after, and their transaction is not settled until they are.

/**
 * Rows a reserved message hands on at its place in its transaction (a backfill page, delivered as
 * READ to one subscription). The session numbers them after the message, so their event ids sort
 * after every change committed before it and before every change after.
 */
export interface InjectedRows {
  webhookId: string;
  /** `eventId` is filled in by the session; `rows`: each change's row identities (order keys). */
  changes: Array<{ change: Change; rows: readonly string[] }>;
  /**
   * Called once every handed row is settled (delivered or parked), with how many were handed;
   * `skipped`: the subscription was gone or paused at that position, nothing was handed. Not
   * called when the session ends first (its rows are dropped unsettled, and read again).
   */
  onSettled: (handed: number, skipped: boolean) => void;
}

/**
 * Hands the rows to the one subscription, as it stood at the message (gone or paused: nothing
 * is handed, and the caller is told to read the page again later), filtered by its filter.
 */
export async function handInjected(
  injected: InjectedRows,
  sub: SubscriptionSpec | undefined,
  nextEventId: () => string,
  /** Hands one delivery on in the message's transaction; `settled` once it is delivered or parked. A promise is backpressure. */
  hand: (change: Change, delivery: DeliveryRecord, settled: () => void) => Promise<void>,
): Promise<void> {
  if (!sub?.active) {
    injected.onSettled(0, true);
    return;
  }
  let handed = 0;
  // One extra count for the loop itself, so the callback cannot fire before every row is handed.
  let unsettled = 1;
  const settledOne = () => {
    if (--unsettled === 0) injected.onSettled(handed, false);
  };
  for (const { change, rows } of injected.changes) {
    // Numbered even when filtered out: ids are positions.
    change.eventId = nextEventId();
    if (!filterMatches(sub.filter, change)) continue;
    handed++;
    unsettled++;
    await hand(change, readDelivery(sub, change, rows), settledOne);
  }
  settledOne();
}
