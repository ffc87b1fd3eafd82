// How many requests one subscription may have in flight in this process. WEBHOOK_ENDPOINT_CONCURRENCY
// (16) always; more, up to WEBHOOK_ENDPOINT_CONCURRENCY_MAX, while deliveries of the subscription
// wait for room and its endpoint answers fast — so a receiver that could take more catches up
// sooner after an outage, and one that slows down or fails is asked for less again. Additive
// increase, multiplicative decrease, as TCP probes a path: one more request in flight per round of
// fast answers, half as many (never below the base) at a failure or a slow answer. The stream and
// the retry queue share the limit (lanes.ts, worker.ts); the global budget and each project's fair
// share still bound what any subscription takes.

/** An answer within this is fast: a receiver answering slower is not asked for more. */
export const FAST_ANSWER_MS = 100;
/** A raised limit no delivery waited at for this long goes back to the base: the next backlog probes again. */
const IDLE_MS = 5000;

interface Raised {
  /** Fractional while it grows. */
  limit: number;
  /** When deliveries last waited at the limit (ms). */
  at: number;
}

export class EndpointLimits {
  readonly #raised = new Map<string, Raised>();
  /** Subscriptions whose deliveries waited for room at their limit since the last sweep: only they are asked for more. */
  readonly #pressed = new Set<string>();

  constructor(
    readonly base: number,
    readonly max: number,
    private readonly o: { fastMs?: number; now?: () => number } = {},
  ) {}

  private now(): number {
    return (this.o.now ?? Date.now)();
  }

  /** Requests the subscription may have in flight now. */
  of(webhookId: string): number {
    const r = this.#raised.get(webhookId);
    return r ? Math.floor(r.limit) : this.base;
  }

  /** Deliveries of the subscription wait because it is at its limit (a pump found no room for them). */
  pressed(webhookId: string): void {
    if (this.max <= this.base) return;
    this.#pressed.add(webhookId);
    const r = this.#raised.get(webhookId);
    if (r) r.at = this.now();
  }

  /** A request ended: `ok` (answered 2xx) within `ms`. */
  answered(webhookId: string, ok: boolean, ms: number): void {
    if (this.max <= this.base) return;
    const r = this.#raised.get(webhookId);
    if (!ok || ms >= (this.o.fastMs ?? FAST_ANSWER_MS)) {
      this.#pressed.delete(webhookId);
      if (r && (r.limit /= 2) <= this.base) this.#raised.delete(webhookId);
      return;
    }
    if (!this.#pressed.has(webhookId)) return;
    const limit = r?.limit ?? this.base;
    if (limit < this.max) this.#raised.set(webhookId, { limit: Math.min(this.max, limit + 1 / Math.floor(limit)), at: this.now() });
  }

  /**
   * Every second (the engine's timer): limits no delivery waited at for IDLE_MS go back to the
   * base, and every subscription must wait at its limit again to be given more.
   */
  sweep(): void {
    const before = this.now() - IDLE_MS;
    for (const [id, r] of this.#raised) if (r.at < before) this.#raised.delete(id);
    this.#pressed.clear();
  }
}
