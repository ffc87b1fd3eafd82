import type { Logger } from '../core/log.js';
import { batchBytes, gather, isBatched, withinBudget, type Gathered } from './batch.js';
import type { Lane } from './job.js';
import { SoonestTimer } from './soonest-timer.js';
import type { Throttle } from './throttle.js';
import { targetBody, type Targets } from './targets.js';

/**
 * What each of the stream's requests carries (lanes.ts asks per lane): one delivery, or for a
 * batched subscription (batch.ts) a batch — which waits to fill up to its maxWaitMs, unless its
 * oldest change nears its park bound. The subscription's settings decide, so its target is read
 * first (every send needs it anyway); the pump is woken when that read is done, and when a
 * waiting batch comes due.
 */
export class StreamGather {
  readonly #targets: Targets;
  readonly #clock: () => Date;
  readonly #log: Logger;
  readonly #pump: () => void;
  /** TAILER_MAX_HELD_BYTES: no batch is larger than half of it (batch.ts withinBudget). */
  readonly #heldBytes: number;
  /** Subscriptions whose target is being read. */
  readonly #loading = new Set<string>();
  /** Pumps again when the soonest waiting batch (or throttled turn) comes due. */
  readonly #wake: SoonestTimer;
  #closed = false;
  /** The throttles (throttle.ts): a request that would go waits for its subscription's turn. */
  readonly #throttle: Throttle | undefined;

  constructor(targets: Targets, clock: () => Date, log: Logger, pump: () => void, heldBytes: number, throttle?: Throttle) {
    this.#throttle = throttle;
    this.#targets = targets;
    this.#heldBytes = heldBytes;
    this.#clock = clock;
    this.#log = log;
    this.#pump = pump;
    this.#wake = new SoonestTimer(() => this.#pump());
  }

  /** Whether the subscription's requests are batches (read in the same turn as gather: the settings that gathered them). */
  batched(webhookId: string): boolean {
    return isBatched(this.#targets.peek(webhookId)?.batch);
  }

  /** Changes per request of the subscription, as far as known (1 when not batched or not loaded). */
  batchSize(webhookId: string | undefined): number {
    return webhookId === undefined ? 1 : (this.#targets.peek(webhookId)?.batch.maxEvents ?? 1);
  }

  /** What the lane's next request carries — once its subscription's throttle lets it go. */
  gather(webhookId: string, lane: Lane): Gathered {
    const g = this.#gather(webhookId, lane);
    if (!('take' in g)) return g;
    const wait = this.#throttle?.take(webhookId, this.#targets.peek(webhookId)?.rateLimit ?? null) ?? 0;
    return wait > 0 ? { waitMs: wait } : g;
  }

  #gather(webhookId: string, lane: Lane): Gathered {
    const target = this.#targets.peek(webhookId);
    if (target === undefined) {
      this.#load(webhookId);
      return { waitMs: Number.POSITIVE_INFINITY };
    }
    // Its project, before the request is counted (the fair share's unit): a lane made before its
    // target was read is named after its schema, and counted under two names a project got two shares.
    if (target) lane.tenant = target.projectId;
    if (!target || !isBatched(target.batch)) return { take: 1 };
    const now = this.#clock().getTime();
    const waiting = Array.from({ length: Math.min(lane.waiting.length, target.batch.maxEvents) }, (_, i) => lane.waiting.peekAt(i)!);
    const head = waiting[0]!;
    // Each body rendered once, here: the request sends these bytes (Job.body).
    const bytes = waiting.map((j) => batchBytes((j.body ??= targetBody(target, j.delivery, j.event))));
    const settings = withinBudget(target.batch, this.#heldBytes);
    return gather(bytes, settings, now - head.createdAt.getTime(), head.deadline - now <= settings.maxWaitMs);
  }

  /** The pump's shortest batch wait (lanes.ts): pump again then. */
  wakeIn(ms: number): void {
    if (!this.#closed) this.#wake.in(ms);
  }

  close(): void {
    this.#closed = true;
    this.#wake.stop();
  }

  #load(webhookId: string): void {
    if (this.#loading.has(webhookId)) return;
    this.#loading.add(webhookId);
    this.#targets.load(webhookId).then(
      () => {
        this.#loading.delete(webhookId);
        if (!this.#closed) this.#pump();
      },
      (err: unknown) => {
        this.#loading.delete(webhookId);
        this.#log.error({ err, webhook: webhookId }, 'could not read a subscription for delivery; trying again');
        setTimeout(() => !this.#closed && this.#pump(), 250).unref();
      },
    );
  }
}
