// The throttle (a subscription's `rateLimit`): a gate before a send, like the breaker. A token
// bucket per subscription, shared by the stream and the retry queue of the leading tailer — the
// only process that sends a throttled subscription's deliveries (a standby's worker does not claim
// them: sql/queue.ts), so the bucket is the receiver's whole budget. A request that finds no token
// waits where it is (the stream's lane, the worker's claimed queue) and is started when one is due:
// no attempt spent, no breaker failure, no slot held while waiting.

export interface RateLimitSettings {
  perSecond: number;
  burst: number;
}

interface Bucket {
  tokens: number;
  /** performance.now() of the last refill. */
  at: number;
  perSecond: number;
  burst: number;
  /** Whether the last ask found none (a wait counted once, until a token is taken). */
  waiting: boolean;
}

export class Throttle {
  readonly #buckets = new Map<string, Bucket>();
  readonly #onWait: () => void;

  /** `onWait`: a request of a throttled subscription started waiting for its turn (a metric). */
  constructor(onWait: () => void = () => undefined) {
    this.#onWait = onWait;
  }

  /**
   * 0 when a request of the subscription may go now (its token is taken); otherwise the ms until
   * one may. No limit: always 0. A changed limit starts a fresh bucket.
   */
  take(webhookId: string, limit: RateLimitSettings | null, now = performance.now()): number {
    if (!limit) return 0;
    let b = this.#buckets.get(webhookId);
    if (!b || b.perSecond !== limit.perSecond || b.burst !== limit.burst) {
      b = { tokens: limit.burst, at: now, perSecond: limit.perSecond, burst: limit.burst, waiting: false };
      this.#buckets.set(webhookId, b);
    }
    b.tokens = Math.min(b.burst, b.tokens + ((now - b.at) / 1000) * b.perSecond);
    b.at = now;
    if (b.tokens >= 1) {
      b.tokens -= 1;
      b.waiting = false;
      return 0;
    }
    if (!b.waiting) {
      b.waiting = true;
      this.#onWait();
    }
    return Math.max(1, Math.ceil(((1 - b.tokens) / b.perSecond) * 1000));
  }
}

/** Deliveries a worker may hold claimed for a throttled subscription: about 5 s of its turns, so leases outlast the wait. */
export function claimAhead(limit: RateLimitSettings | null | undefined): number {
  return limit ? Math.max(1, Math.ceil(limit.perSecond * 5)) : Number.POSITIVE_INFINITY;
}
