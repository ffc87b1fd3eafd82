// The throttle (a subscription's `rateLimit`): a gate before a send, like the breaker. A token
// bucket per subscription, shared by the stream and the retry queue of the leading tailer — the
// only process that sends a throttled subscription's deliveries (a standby's worker does not claim
// them: sql/queue.ts), so the bucket is the receiver's whole budget. A request that finds no token
// waits where it is (the stream's lane, the worker's claimed queue) and is started when one is due:
// no attempt spent, no breaker failure, no slot held while waiting. The waits are tallied per
// subscription and minute for its health (drainWaits → sql/throttle-minutes.ts).

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
  /** performance.now() when the last ask found none (a wait counted once, until a token is taken); null: not waiting. */
  waitingSince: number | null;
}

/** A subscription's waits that ended in one minute: how many, and how long in all. */
export interface ThrottleWaits {
  webhookId: string;
  /** The minute's start, ms since the epoch. */
  minute: number;
  waits: number;
  waitedMs: number;
}

export class Throttle {
  readonly #buckets = new Map<string, Bucket>();
  readonly #onWait: () => void;
  readonly #wallClock: () => number;
  /** Waits ended since the last drainWaits, by subscription and minute. */
  #waits = new Map<string, ThrottleWaits>();

  /** `onWait`: a request of a throttled subscription started waiting for its turn (a metric). */
  constructor(onWait: () => void = () => undefined, wallClock: () => number = Date.now) {
    this.#onWait = onWait;
    this.#wallClock = wallClock;
  }

  /** The waits that ended since the last call, one entry per subscription and minute; the tally starts afresh. */
  drainWaits(): ThrottleWaits[] {
    const waits = [...this.#waits.values()];
    this.#waits = new Map();
    return waits;
  }

  /**
   * 0 when a request of the subscription may go now (its token is taken); otherwise the ms until
   * one may. No limit: always 0. A changed limit starts a fresh bucket.
   */
  take(webhookId: string, limit: RateLimitSettings | null, now = performance.now()): number {
    if (!limit) return 0;
    let b = this.#buckets.get(webhookId);
    if (!b || b.perSecond !== limit.perSecond || b.burst !== limit.burst) {
      b = { tokens: limit.burst, at: now, perSecond: limit.perSecond, burst: limit.burst, waitingSince: null };
      this.#buckets.set(webhookId, b);
    }
    b.tokens = Math.min(b.burst, b.tokens + ((now - b.at) / 1000) * b.perSecond);
    b.at = now;
    if (b.tokens >= 1) {
      b.tokens -= 1;
      if (b.waitingSince !== null) this.#tally(webhookId, now - b.waitingSince);
      b.waitingSince = null;
      return 0;
    }
    if (b.waitingSince === null) {
      b.waitingSince = now;
      this.#onWait();
    }
    return Math.max(1, Math.ceil(((1 - b.tokens) / b.perSecond) * 1000));
  }

  #tally(webhookId: string, waitedMs: number): void {
    const minute = Math.floor(this.#wallClock() / 60_000) * 60_000;
    const key = `${webhookId}\0${minute}`;
    const t = this.#waits.get(key);
    if (t) {
      t.waits++;
      t.waitedMs += waitedMs;
    } else this.#waits.set(key, { webhookId, minute, waits: 1, waitedMs });
  }
}

/** Deliveries a worker may hold claimed for a throttled subscription: about 5 s of its turns, so leases outlast the wait. */
export function claimAhead(limit: RateLimitSettings | null | undefined): number {
  return limit ? Math.max(1, Math.ceil(limit.perSecond * 5)) : Number.POSITIVE_INFINITY;
}
