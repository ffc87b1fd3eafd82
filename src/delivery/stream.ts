import { setTimeout as sleep } from 'node:timers/promises';
import type { Context } from '../core/context.js';
import type { Queryable } from '../core/db/pool.js';
import type { CapturedDelivery, CapturedEvent, DeliveryStream } from '../tailer/sink.js';
import { attempt, conclude, keptRequest, type AttemptDeps, type AttemptOutcome, type AttemptRequest } from './attempt.js';
import { newBatchId } from './batch.js';
import { StreamGather } from './stream-gather.js';
import { sweepPastBound } from './stream-sweep.js';
import { settleAnswer, settleWait, type ParkState, type Settlement } from './stream-settle.js';
import { move, type Job, type Lane, type StreamLimits } from './job.js';
import { Journal, type ParkedEntry } from './journal.js';
import { spillThreshold } from './spill.js';
import { HeldDeliveries } from './payload-bytes.js';
import { StreamLanes } from './lanes.js';
import { PendingParks } from './pending-parks.js';
import { RowOrder } from './row-order.js';
import { recordAttempts } from './sql/queue.js';
import { targetBatchRequest, targetBody, targetRequest, type Target, type Targets } from './targets.js';

/**
 * The stream: deliveries from the WAL reader straight to the receivers, nothing written first.
 *
 *   matched change → lane of its subscription → attempt → 2xx: history row (journal) → settled
 *                                                        → failure: parked in the retry queue → settled
 *
 * Every delivery the stream accepts ends settled exactly once, in one of these ways: delivered
 * (its history row committed), parked (its event and delivery rows committed, due when its
 * schedule says), or dropped because its subscription is gone. Parking happens when an attempt
 * fails, when the breaker says wait, when the subscription is paused now, when the delivery is
 * still not delivered parkAfterMs after it was read (a hanging receiver cannot hold the slot
 * longer), and when its subscription's lane is full (spill: the retry queue, which every tailer
 * process drains, takes the excess). Reading waits when memory is full (HeldDeliveries).
 *
 * A row-ordered delivery (one with order keys) first waits in memory for its turn — the previous
 * change of its row answered 2xx, or parked before it (row-order.ts, where the argument for the
 * order of first arrivals is) — and only then joins its lane, or is parked behind its row's
 * deliveries in the retry queue.
 */
export class StreamDelivery implements DeliveryStream {
  readonly #ctx: Context;
  readonly #deps: AttemptDeps;
  readonly #targets: Targets;
  readonly #limits: StreamLimits;
  readonly #journal: Journal;
  readonly #order: RowOrder<Job>;
  readonly #lanes: StreamLanes;
  readonly #sending = new Set<Job>();
  /** Row-ordered jobs done with their turn (row-order.ts is told once). */
  readonly #releasedJobs = new WeakSet<Job>();
  readonly #held: HeldDeliveries;
  #roomWaiters: Array<() => void> = [];
  #closed = false;
  /** Whether this stream still sends: the leadership it was opened for holds (throttled subscriptions are its alone). */
  get isOpen(): boolean {
    return !this.#closed;
  }
  /** A graceful stop is under way: nothing new is sent, what would be is parked (drain). */
  #draining = false;
  /** Parks of in-flight deliveries not written yet: told false if the stream closes first. */
  readonly #pendingParks = new PendingParks();
  readonly #sweeper: NodeJS.Timeout;
  readonly #ticker: NodeJS.Timeout;
  /** What each request carries: one delivery, or a batch (stream-gather.ts). */
  readonly #gather: StreamGather;
  stats = { delivered: 0, parked: 0, spilled: 0, late: 0 };

  constructor(ctx: Context, deps: AttemptDeps, targets: Targets, limits: StreamLimits, fenced: Queryable, onError: (err: Error) => void) {
    this.#ctx = ctx;
    this.#deps = deps;
    this.#targets = targets;
    this.#limits = limits;
    this.#lanes = new StreamLanes(limits, deps.endpointLimits);
    this.#held = limits.held ?? new HeldDeliveries(limits.maxHeld, ctx.config.tailerMaxHeldBytes);
    this.#gather = new StreamGather(
      targets,
      ctx.clock,
      ctx.log.child({ component: 'delivery' }),
      () => this.#pump(),
      this.#held.maxBytes,
      deps.throttle,
    );
    this.#journal = new Journal(fenced, onError);
    this.#order = new RowOrder<Job>(
      ctx.pool,
      ctx.log.child({ component: 'delivery' }),
      { maxKeysPerSubscription: limits.maxOrderKeys ?? 50_000, refreshMs: limits.orderRefreshMs ?? 250 },
      (job, park) => this.#takeTurn(job, park),
    );
    // The retry queue's unfinished row keys, before any ordered delivery acts (a failure ends the
    // session, as a failed write does: the next one reads again from the durable position).
    this.#order.open().catch((err: unknown) => {
      if (!this.#closed) onError(err as Error);
    });
    this.#sweeper = setInterval(
      () => sweepPastBound(this.#ctx.clock(), limits.timeoutMs, this.#lanes, this.#sending, (job, state) => this.#park(job, state)),
      Math.max(50, Math.min(1000, limits.parkAfterMs / 4)),
    );
    this.#ticker = setInterval(() => this.#lanes.tick(), 1000);
    this.#sweeper.unref();
    this.#ticker.unref();
  }

  /** Deliveries the stream holds per subscription (waiting or in flight): the retry queue's claims leave that much less room. */
  load(): Map<string, number> {
    return this.#lanes.load();
  }

  accept(event: CapturedEvent, deliveries: CapturedDelivery[], settled: () => void): void | Promise<void> {
    if (this.#closed) return;
    let left = deliveries.length;
    const one = () => {
      if (--left === 0) settled();
    };
    const now = this.#ctx.clock();
    for (const delivery of deliveries) {
      this.#held.add(event);
      const job: Job = {
        event,
        delivery,
        createdAt: now,
        deadline: now.getTime() + this.#limits.parkAfterMs,
        state: delivery.orderKeys ? 'ordering' : 'waiting',
        lease: null,
        settled: one,
      };
      if (delivery.orderKeys) {
        this.#order.add(job); // it joins its lane (or is parked) when its turn comes
        continue;
      }
      const lane = this.#lane(delivery.webhookId, event);
      if (this.#draining || lane.waiting.length >= this.#spillAt(lane)) {
        if (!this.#draining) this.stats.spilled++;
        this.#park(job, { status: 'pending', attempts: 0, nextAttemptAt: now });
        continue;
      }
      this.#lanes.push(lane, job);
    }
    this.#pump();
    if (!this.#held.room) return new Promise((resolve) => this.#roomWaiters.push(resolve));
  }

  /** The stream's requests in flight for a subscription. */
  active = (webhookId: string): number => this.#lanes.get(webhookId)?.active ?? 0;

  /** Writes the journal has committed. */
  get batches(): number {
    return this.#journal.stats.batches;
  }

  subscriptionChanged(webhookId: string): void {
    this.#targets.changed(webhookId);
  }

  /** A bus worker took a partition (bus/consumer.ts): its previous owner's parks and unseen subscription changes are read again. */
  async readAgain(): Promise<void> {
    this.#targets.forgetAll();
    await this.#order.open();
  }

  /** A retry-queue request to this subscription ended: its slot may start a waiting delivery. */
  slotFree(webhookId: string): void {
    if (this.#lanes.isReady(webhookId)) this.#pump();
  }

  /** A row-ordered delivery finished in the retry queue: its row's next change may be free to go. */
  orderedFinished(): void {
    this.#order.refreshSoon();
  }

  /**
   * A graceful stop (DeliveryStream.drain): nothing new starts; waiting deliveries are parked (they
   * were never sent); requests in flight finish, or are parked leased to their attempt once
   * `timeoutMs` has passed; row-ordered ones park as their turn comes; then the journal writes it
   * all. Every delivery handed over is then settled: the slot moves past it, and what a receiver
   * acknowledged has its history row — the next leader sends none of it again.
   */
  async drain(timeoutMs: number): Promise<void> {
    if (this.#closed) return;
    this.#draining = true;
    const now = this.#ctx.clock();
    this.#lanes.takeAll((job) => this.#park(job, { status: 'pending', attempts: 0, nextAttemptAt: now }));
    const until = performance.now() + timeoutMs;
    while (this.#sending.size > 0 && performance.now() < until && !this.#closed) await sleep(20);
    const t = this.#ctx.clock().getTime();
    for (const job of this.#sending) {
      // Its answer may still come within the sender's time-out: the retry queue leaves it alone until then.
      if (job.state === 'sending')
        this.#park(job, { status: 'pending', attempts: 0, nextAttemptAt: new Date(t + this.#limits.timeoutMs + 5000) });
    }
    await this.#journal.idle();
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#pendingParks.close();
    clearInterval(this.#sweeper);
    clearInterval(this.#ticker);
    this.#gather.close();
    this.#journal.close();
    this.#order.close();
    this.#lanes.clear();
    for (const wake of this.#roomWaiters.splice(0)) wake();
  }

  #lane(webhookId: string, event: CapturedEvent): Lane {
    return this.#lanes.lane(webhookId, () => this.#targets.peek(webhookId)?.projectId ?? `schema:${event.schema}`);
  }

  /** What a lane may queue before its deliveries spill to the retry queue (spill.ts). */
  #spillAt(lane: Lane): number {
    const head = lane.waiting.peekFront();
    // A batched lane holds at least two batches' worth: spilled sooner, its batches never filled.
    const batch = this.#gather.batchSize(head?.delivery.webhookId);
    const threshold = spillThreshold({
      sharing: this.#limits.sharing(),
      held: this.#held.pressure,
      maxHeld: this.#limits.maxHeld,
      perWebhook: this.#limits.perWebhook,
      parkAfterMs: this.#limits.parkAfterMs,
      recentlyFinished: lane.finishedBefore + lane.finished,
      headWaitedMs: head ? this.#ctx.clock().getTime() - (head.deadline - this.#limits.parkAfterMs) : 0,
    });
    return Math.max(threshold, batch * 2);
  }

  /**
   * A row-ordered delivery's turn (row-order.ts): parked behind its row's deliveries in the retry
   * queue, or into its lane like any other delivery (parked when past its bound, or spilled).
   */
  #takeTurn(job: Job, park: boolean): void {
    const now = this.#ctx.clock();
    if (park || this.#draining || job.deadline <= now.getTime())
      return this.#park(job, { status: 'pending', attempts: 0, nextAttemptAt: now });
    const lane = this.#lane(job.delivery.webhookId, job.event);
    if (lane.waiting.length >= this.#spillAt(lane)) {
      this.stats.spilled++;
      return this.#park(job, { status: 'pending', attempts: 0, nextAttemptAt: now });
    }
    move(job, 'waiting');
    this.#lanes.push(lane, job);
    this.#pump();
  }

  /** A row-ordered job is done with its turn: answered 2xx or dropped (`parked` false), or handed to the journal to be parked. */
  #released(job: Job, parked: boolean): void {
    if (!job.delivery.orderKeys || this.#releasedJobs.has(job)) return;
    this.#releasedJobs.add(job);
    this.#order.released(job, parked);
  }

  /** Starts waiting deliveries while there is room, a fair turn for each subscription (lanes.ts). */
  #pump(): void {
    const wake = this.#lanes.pump(
      () => this.#closed || this.#draining,
      (jobs, lane) => this.#send(jobs, lane),
      (id, lane) => this.#gather.gather(id, lane),
    );
    this.#gather.wakeIn(wake); // a batch still filling goes when its oldest change has waited maxWaitMs
  }

  /** One request: a delivery alone, or a batched subscription's batch (its members share its id and its fate). */
  #send(jobs: Job[], lane: Lane): void {
    const batch = this.#gather.batched(jobs[0]!.delivery.webhookId) ? { id: newBatchId(), jobs } : undefined;
    for (const job of jobs) {
      move(job, 'sending');
      job.batch = batch;
      this.#sending.add(job);
    }
    const tenant = this.#lanes.started(lane);
    void this.#attempt(jobs)
      .catch((err: unknown) => {
        // Not an answer from the receiver but a fault here: park it, so it is not lost.
        this.#ctx.log.error({ err, delivery: jobs[0]!.delivery.id, batch: batch?.id }, 'delivery attempt failed unexpectedly; parked');
        for (const job of jobs) {
          if (job.state === 'sending') this.#park(job, { status: 'pending', attempts: 0, nextAttemptAt: this.#ctx.clock() });
        }
      })
      .finally(() => {
        for (const job of jobs) this.#sending.delete(job);
        this.#lanes.ended(lane, tenant, jobs.length);
        this.#pump();
      });
  }

  async #attempt(jobs: Job[]): Promise<void> {
    const first = jobs[0]!;
    const webhookId = first.delivery.webhookId;
    const target: Target | null = this.#targets.peek(webhookId) ?? (await this.#targets.load(webhookId));
    // Parked meanwhile (a batch's members are parked together): the retry queue has it.
    if (this.#closed || first.state !== 'sending') return;
    if (!target) {
      for (const job of jobs) {
        this.#released(job, false);
        this.#finish(job); // deleted since: it gets nothing
      }
      return;
    }
    const lane = this.#lanes.get(webhookId);
    if (lane) lane.tenant = target.projectId; // counted as such from its next request
    const now = this.#ctx.clock();
    // Paused now: it waits in the retry queue, which takes only active subscriptions.
    if (!target.active) {
      for (const job of jobs) this.#park(job, { status: 'pending', attempts: 0, nextAttemptAt: now });
      return;
    }
    const request = first.batch
      ? targetBatchRequest(
          target,
          first.batch.id,
          jobs.map((j) => (j.body ??= targetBody(target, j.delivery, j.event))),
        )
      : targetRequest(target, first.delivery, first.event);
    const outcome = await this.#sendRequest(request, first.batch !== undefined);
    if (this.#closed) return;
    if (outcome.kind === 'waited') {
      await Promise.all(jobs.map((job) => this.#settle(job, settleWait(job, outcome))));
      return;
    }
    const concluded = await conclude(this.#ctx, this.#deps, outcome, {
      webhookId,
      attemptNo: 1,
      delaysMs: target.retryDelaysMs ?? this.#limits.retryDelaysMs,
      committedAt: first.event.committedAt,
      deliveries: jobs.length,
    });
    const keep = this.#ctx.config.webhooks.keepPayloads;
    // Each member keeps its own body (what it adds to the batch): the retry queue rebuilds the batch from them.
    const kept = (job: Job) => keptRequest(keep, first.batch ? job.body! : request.body, outcome);
    await Promise.all(jobs.map((job) => this.#settle(job, settleAnswer(job, target, outcome, concluded, kept(job)))));
  }

  /** Sends a request; a batch's body weighs on the byte budget while it is out (payload-bytes.ts). */
  async #sendRequest(request: AttemptRequest, batch: boolean): Promise<AttemptOutcome> {
    this.#held.addBody(batch ? request.body.length : 0);
    try {
      return await attempt(this.#deps, request);
    } finally {
      this.#held.removeBody(batch ? request.body.length : 0);
      if (this.#held.room && this.#roomWaiters.length > 0) for (const wake of this.#roomWaiters.splice(0)) wake();
    }
  }

  /** Applies what an outcome means for one delivery (stream-settle.ts). */
  async #settle(job: Job, s: Settlement): Promise<void> {
    if (s.kind === 'late') {
      this.stats.late++;
      if (!(await job.parkWritten)) return; // the stream closed first: the lease runs out, it is sent again
      await recordAttempts(this.#ctx.pool, [s.record]);
      if (job.delivery.orderKeys && s.finished) this.#order.refreshSoon();
      return;
    }
    if (s.kind === 'park') return this.#park(job, s.state, s.attempt);
    // The receiver has it: the next change of its row may go now (before the history row commits).
    this.#released(job, false);
    this.stats.delivered++;
    move(job, 'settling');
    this.#journal.delivered({ ...s.entry, done: () => this.#finish(job) });
  }

  #park(job: Job, state: ParkState, attemptMade: ParkedEntry['attempt'] = null): void {
    this.stats.parked++;
    let committed: (() => void) | null = null;
    if (job.state === 'sending' && !attemptMade) {
      move(job, 'parked-sending');
      job.lease = state.nextAttemptAt;
      const pending = this.#pendingParks.open();
      job.parkWritten = pending.written;
      committed = pending.committed;
    } else move(job, 'settling');
    this.#journal.parked({
      event: job.event,
      delivery: job.delivery,
      createdAt: job.createdAt,
      status: state.status,
      attempts: state.attempts,
      httpStatus: state.httpStatus ?? null,
      lastError: state.lastError ?? null,
      nextAttemptAt: state.nextAttemptAt,
      attempt: attemptMade,
      batchId: job.batch?.id ?? null,
      done: () => {
        if (job.delivery.orderKeys) this.#order.parkCommitted(job);
        committed?.();
        this.#finish(job);
      },
    });
    // After the park is handed to the journal: the row's later changes are parked behind it, in
    // the same batch or a later one, never an earlier one (the journal keeps the order).
    this.#released(job, true);
  }

  #finish(job: Job): void {
    if (this.#closed || job.state === 'finished') return;
    move(job, 'finished');
    job.settled();
    this.#held.remove(job.event);
    if (this.#held.room && this.#roomWaiters.length > 0) for (const wake of this.#roomWaiters.splice(0)) wake();
  }
}
