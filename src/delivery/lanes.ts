import Denque from 'denque';
import type { EndpointLimits } from './endpoint-limits.js';
import { count, fairShare, tenantsOf } from './fair-share.js';
import type { Job, Lane, StreamLimits } from './job.js';
import type { Gathered } from './batch.js';

/**
 * The stream's lanes (stream.ts): one per subscription with deliveries waiting, in flight or
 * finished in the last two seconds (their pace, for the spill threshold), and the fair pump that
 * starts their waiting deliveries within the stream's budget of requests in flight.
 */
export class StreamLanes {
  readonly #limits: StreamLimits;
  readonly #lanes = new Map<string, Lane>();
  /** Lanes with waiting deliveries, for the fair pump. */
  readonly #ready = new Set<string>();
  #active = 0;
  /** Requests in flight per project (Lane.tenant): each may hold a fair share of the budget. */
  readonly #tenantActive = new Map<string, number>();

  constructor(
    limits: StreamLimits,
    /** Each subscription's requests in flight, raised for fast endpoints (the engine's, shared with the retry queue); perWebhook without. */
    private readonly endpoints?: EndpointLimits,
  ) {
    this.#limits = limits;
  }

  /** A subscription's lane, made on its first delivery with the tenant `tenant()` names. */
  lane(webhookId: string, tenant: () => string): Lane {
    let lane = this.#lanes.get(webhookId);
    if (!lane) {
      lane = { tenant: tenant(), waiting: new Denque(), active: 0, finished: 0, finishedBefore: 0 };
      this.#lanes.set(webhookId, lane);
    }
    return lane;
  }

  get(webhookId: string): Lane | undefined {
    return this.#lanes.get(webhookId);
  }

  /** Deliveries held per subscription (waiting or in flight). */
  load(): Map<string, number> {
    const out = new Map<string, number>();
    for (const [id, lane] of this.#lanes) {
      // (Not the row-ordered deliveries waiting for their turn: their predecessor is often in the
      // retry queue, and counting them would keep the queue's workers from claiming it.)
      const n = lane.waiting.length + lane.active;
      if (n > 0) out.set(id, n);
    }
    return out;
  }

  /** Queues a delivery at the end of its subscription's lane. */
  push(lane: Lane, job: Job): void {
    lane.waiting.push(job);
    this.#ready.add(job.delivery.webhookId);
  }

  /** Whether the subscription has deliveries waiting for a slot. */
  isReady(webhookId: string): boolean {
    return this.#ready.has(webhookId);
  }

  /** Empties every lane (a graceful stop), handing each waiting delivery to `take`, lane by lane. */
  takeAll(take: (job: Job) => void): void {
    for (const [id, lane] of this.#lanes) {
      const waiting = lane.waiting.toArray();
      lane.waiting.clear();
      this.#ready.delete(id);
      for (const job of waiting) take(job);
    }
  }

  /** Takes the waiting deliveries `pick` chooses out of their lanes, handing each to `take`, lane by lane. */
  takeWaiting(pick: (job: Job) => boolean, take: (job: Job) => void): void {
    for (const [id, lane] of this.#lanes) {
      // (Not only the first: a row-ordered delivery joins its lane when its turn comes, behind younger ones.)
      const all = lane.waiting.toArray();
      if (!all.some(pick)) continue;
      const taken = all.filter(pick);
      lane.waiting = new Denque(all.filter((j) => !pick(j)));
      if (lane.waiting.length === 0) this.#ready.delete(id);
      for (const job of taken) take(job);
    }
  }

  /** Every second: the pace of each lane moves on a second; idle lanes go. */
  tick(): void {
    for (const [id, lane] of this.#lanes) {
      lane.finishedBefore = lane.finished;
      lane.finished = 0;
      if (lane.waiting.length === 0 && lane.active === 0 && lane.finishedBefore === 0) this.#lanes.delete(id);
    }
  }

  /**
   * Starts waiting deliveries (`send`) while there is room, a fair turn for each subscription: at
   * most its endpoint's limit of requests of one subscription (endpoint-limits.ts), and no project beyond its fair share of the
   * budget while another has work — so a project whose endpoints hang holds its share, not every
   * slot. `gather` says how many of a lane's waiting deliveries go in its next request (1, or a
   * batch: batch.ts), or how long the lane waits for its batch to fill; the shortest such wait
   * is returned (Infinity: none), for the caller to pump again then.
   */
  pump(stopped: () => boolean, send: (jobs: Job[], lane: Lane) => void, gather: (id: string, lane: Lane) => Gathered): number {
    const share = fairShare(this.#limits.concurrency, this.#tenantActive, tenantsOf(this.#ready, this.#lanes));
    let wake = Number.POSITIVE_INFINITY;
    while (this.#ready.size > 0 && this.#active < this.#limits.concurrency && !stopped()) {
      let started = false;
      for (const id of this.#ready) {
        const lane = this.#lanes.get(id);
        if (!lane || lane.waiting.length === 0) {
          this.#ready.delete(id);
          continue;
        }
        const limit = this.endpoints?.of(id) ?? this.#limits.perWebhook;
        if (lane.active + (this.#limits.queueActive?.(id) ?? 0) >= limit) {
          this.endpoints?.pressed(id);
          continue;
        }
        if ((this.#tenantActive.get(lane.tenant) ?? 0) >= share) continue;
        const g = gather(id, lane);
        if ('waitMs' in g) {
          wake = Math.min(wake, g.waitMs);
          continue;
        }
        const jobs: Job[] = [];
        while (jobs.length < g.take && lane.waiting.length > 0) jobs.push(lane.waiting.shift()!);
        if (lane.waiting.length === 0) this.#ready.delete(id);
        started = true;
        send(jobs, lane);
        if (this.#active >= this.#limits.concurrency) return wake;
      }
      if (!started) return wake;
    }
    return wake;
  }

  /** A request of the lane starts: counted for it and its tenant as it is now (returned, for ended). */
  started(lane: Lane): string {
    lane.active++;
    this.#active++;
    count(this.#tenantActive, lane.tenant, 1);
    return lane.tenant;
  }

  /** A request of the lane ended, carrying `deliveries` (its pace counts deliveries, a batch as many). */
  ended(lane: Lane, tenant: string, deliveries = 1): void {
    lane.active--;
    lane.finished += deliveries;
    this.#active--;
    count(this.#tenantActive, tenant, -1);
  }

  clear(): void {
    this.#lanes.clear();
    this.#ready.clear();
  }
}
