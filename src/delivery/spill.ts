// When the stream stops holding a subscription's deliveries in memory and parks them in the
// retry queue instead (spill). The stream asks for each delivery it takes in; a pure rule, so it
// is tested on its own (test/unit/delivery/spill.test.ts).

/**
 * With other tailer processes to share the work, a lane may hold about this many seconds of its
 * recent rate before the rest spills. Short: what the stream holds only this process can send,
 * so a long lane is a tail that the others watch idle.
 */
export const SHARED_SPILL_SECONDS = 0.5;

export interface SpillInput {
  /** Whether other tailer processes run (they drain the retry queue too). */
  sharing: boolean;
  /** Deliveries the stream holds now, over all lanes, and its cap. */
  held: number;
  maxHeld: number;
  perWebhook: number;
  parkAfterMs: number;
  /** The lane's deliveries finished this second and the last (its recent rate, roughly). */
  recentlyFinished: number;
  /** How long the lane's oldest waiting delivery has waited (0 when none waits). */
  headWaitedMs: number;
}

/**
 * How many deliveries a lane may have waiting before the next one spills.
 *
 * Shared: about SHARED_SPILL_SECONDS of its recent rate (at least two rounds of its in-flight cap).
 * Alone, the WAL is the cheaper queue: a lane spills only when memory runs short (three quarters
 * of the cap) and its oldest delivery has waited a quarter of the park-after bound — so one slow
 * subscription cannot stop the reader for the others for long, while a fast one catching up on a
 * backlog is sent, not turned into writes (parking costs more than sending; reading waits).
 */
export function spillThreshold(s: SpillInput): number {
  if (s.sharing) return Math.max(s.perWebhook * 2, s.recentlyFinished * SHARED_SPILL_SECONDS);
  if (s.held < s.maxHeld * 0.75) return Number.POSITIVE_INFINITY;
  return s.headWaitedMs > s.parkAfterMs / 4 ? s.perWebhook * 8 : Number.POSITIVE_INFINITY;
}
