import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import type { Context } from '../core/context.js';
import type { AttemptDeps } from './attempt.js';
import { claimedSends, type ClaimedSend } from './batch-claims.js';
import { listenForDueNotes } from './listen-due.js';
import { count, fairShare } from './fair-share.js';
import type { QueueResult, QueueStats } from './queue-result.js';
import { endpointOf, sendClaimed, sendRun } from './queue-send.js';
import { SoonestTimer } from './soonest-timer.js';
import { claimAhead } from './throttle.js';
import { CLAIM_AHEAD, MAX_CLAIM, MAX_UNWRITTEN } from './queue-limits.js';
import { OpenedSecrets } from './secret.js';
import { claimDue, endUnsendable, postpone, queueDepth, recordAttempts, type AttemptResult, type ClaimedDelivery } from './sql/queue.js';

export interface QueueWorkerOptions {
  /** Attempts in flight at once, over all endpoints. */
  concurrency: number;
  /** In flight at once for one subscription (no head-of-line blocking of the others). */
  perWebhook: number;
  /** How often to look for due deliveries when no notification arrives. */
  pollMs: number;
  /** How often queue depth and counts are logged. */
  reportIntervalMs: number;
  /** How long a claim lasts, counted from the send (default: twice the time-out plus 5 s). */
  leaseMs?: number;
  /** What the stream holds per subscription in this process (claims leave it that much less room). */
  streamLoad: () => Map<string, number>;
  /** Payload bytes held in this process by the stream and this worker together at most (TAILER_MAX_HELD_BYTES). */
  maxHeldBytes: number;
  /** The payload bytes the stream holds now: claims take only what it leaves of maxHeldBytes. */
  streamBytes: () => number;
  /** The stream's requests in flight for a subscription: perWebhook is per process, shared with it. */
  streamActive: (webhookId: string) => number;
  /** Opens a subscription's sealed signing secret. */
  openSecret: (sealed: Buffer) => string;
  /** A row-ordered delivery's result is written (delivered or dead): its row's next change may go now. */
  onOrderedFinished?: () => void;
  /** A request of this worker to the subscription ended: the stream may use the slot. */
  onSlotFree?: (webhookId: string) => void;
  /** Whether this process leads (its stream is open): only the leader claims throttled subscriptions (throttle.ts). Default true. */
  leading?: () => boolean;
}

export type DisableSubscription = (webhookId: string, reason: string, at: Date) => Promise<boolean>;

/**
 * Drains the durable retry queue (every tailer process runs one, the leader and its standbys):
 * claim (a lease, see store.ts) → admit through the endpoint's breaker → sign and POST → record
 * the attempt and the next due time. Every attempt and schedule is in Postgres, so a restart
 * resumes where things stood; a worker killed mid-attempt leaves a lease that expires, and the
 * delivery is attempted again (at least once).
 *
 * A lease is counted from the send, not the claim: claims run ahead of sending, and a claimed
 * delivery that waited in memory has its lease renewed (with its current lease as the token)
 * before its request starts, unless enough of it is left — so a slow receiver cannot make a
 * delivery's lease run out before its answer, and two workers never both send it.
 */
export class QueueWorker {
  readonly #ctx: Context;
  readonly #o: QueueWorkerOptions;
  readonly #deps: AttemptDeps;
  readonly #inflight = new Map<string, Promise<void>>();
  /** Claimed deliveries per subscription: in flight, and waiting for a slot (claimed ahead). */
  readonly #held = new Map<string, number>();
  readonly #running = new Map<string, number>();
  /** Per project: attempts running and deliveries held (fair-share.ts); and each held subscription's project. */
  readonly #projectRunning = new Map<string, number>();
  readonly #projectHeld = new Map<string, number>();
  readonly #projectOf = new Map<string, string>();
  /** Claimed requests waiting for a slot, per subscription: a delivery alone, or a batch (batch-claims.ts). */
  readonly #queue = new Map<string, ClaimedSend[]>();
  #heldTotal = 0;
  /** The payload bytes of what this worker has claimed and not finished (payload-bytes.ts). */
  #heldBytes = 0;
  readonly #results: AttemptResult[] = [];
  /** Row-ordered deliveries finished (delivered or dead) whose results are not written yet. */
  readonly #releasing = new Set<string>();
  #writing: Promise<void> | null = null;
  #wake: (() => void) | null = null;
  /** A wake-up that came while the loop was busy: the next idle returns at once. */
  #woken = false;
  #listener: pg.Client | null = null;
  #loop: Promise<void> | undefined;
  #reporter: NodeJS.Timeout | undefined;
  /** Pumps again at a throttled subscription's next turn. */
  readonly #turn = new SoonestTimer(() => !this.#stopping && this.#pump());
  #stopping = false;
  /** Aborted by stop(): ends the LISTEN reconnect loop, also mid-backoff. */
  readonly #abort = new AbortController();
  readonly #leaseMs: number;
  readonly #opened: OpenedSecrets;
  stats: QueueStats = { attempts: 0, delivered: 0, failed: 0, dead: 0, waits: 0, claims: 0 };

  constructor(ctx: Context, deps: AttemptDeps, options: QueueWorkerOptions) {
    this.#ctx = ctx;
    this.#deps = deps;
    this.#o = options;
    this.#leaseMs = options.leaseMs ?? ctx.config.webhooks.timeoutMs * 2 + 5000;
    this.#opened = new OpenedSecrets(options.openSecret);
  }

  /** Held deliveries of one subscription at which it is topped up again. */
  get #refillAt(): number {
    return this.#o.perWebhook * (CLAIM_AHEAD - 1);
  }

  /** This worker's requests in flight to a subscription (the endpoint's limit counts the stream's and these together). */
  running(webhookId: string): number {
    return this.#running.get(webhookId) ?? 0;
  }

  start(): void {
    if (this.#loop) return;
    void this.#listen();
    this.#loop = this.#run();
    this.#reporter = setInterval(() => void this.#report(), this.#o.reportIntervalMs);
    this.#reporter.unref();
  }

  /** Stops claiming, lets attempts in flight finish (bounded), writes their results. Idempotent. */
  async stop(timeoutMs = 15_000): Promise<void> {
    this.#stopping = true;
    this.#abort.abort();
    this.#nudge();
    await this.#loop;
    // Claimed but not started: hand them back now rather than when their leases run out.
    const unsent = [...this.#queue.values()].flat().flatMap((s) => s.deliveries);
    this.#queue.clear();
    await postpone(this.#ctx.pool, unsent, this.#ctx.clock()).catch(() => undefined);
    const drained = Promise.all(this.#inflight.values());
    await Promise.race([drained, sleep(timeoutMs)]);
    await this.#flush();
    clearInterval(this.#reporter);
    this.#turn.stop();
    const listener = this.#listener;
    this.#listener = null;
    await listener?.end().catch(() => undefined);
  }

  async #run(): Promise<void> {
    const log = this.#ctx.log.child({ component: 'delivery' });
    // Claims run ahead of sending (up to CLAIM_AHEAD times the concurrency), so a slot that frees up starts
    // the next delivery at once instead of waiting for a round trip to Postgres.
    const capacity = this.#o.concurrency * CLAIM_AHEAD;
    while (!this.#stopping) {
      const room = Math.min(capacity - this.#heldTotal, MAX_CLAIM);
      // Bytes as well as count: 1 MB rows fill memory long before the count is reached. Holding
      // nothing, one delivery is claimed whatever its size (it goes alone).
      const bytes = Math.max(this.#o.maxHeldBytes - this.#o.streamBytes() - this.#heldBytes, this.#heldTotal === 0 ? 1 : 0);
      if (room <= this.#o.concurrency / 4 || bytes <= 0) {
        await this.#idle(this.#o.pollMs);
        continue;
      }
      let claimed: ClaimedDelivery[];
      let sends: ClaimedSend[];
      try {
        const now = this.#ctx.clock();
        claimed = await claimDue(this.#ctx.pool, {
          now,
          leaseUntil: new Date(now.getTime() + this.#leaseMs),
          limit: room,
          perWebhook: this.#o.perWebhook * CLAIM_AHEAD,
          // A subscription is topped up once there is room for perWebhook more (hysteresis: no
          // round trip per finished delivery); until then it counts as full.
          inflight: this.#busy(),
          maxBytes: bytes,
          throttled: this.#o.leading?.() ?? true,
        });
        if (claimed.length > 0) this.stats.claims++;
        const unsendable = claimed.filter((d) => d.payload_gone);
        if (unsendable.length > 0) {
          await endUnsendable(this.#ctx.pool, unsendable);
          log.warn({ deliveries: unsendable.map((d) => d.id) }, 'deliveries whose payload is gone were ended as dead');
          claimed = claimed.filter((d) => !d.payload_gone);
          if (unsendable.some((d) => d.ordered)) this.#o.onOrderedFinished?.();
        }
        if (claimed.length) await this.#deps.breakers.refresh(claimed.map(endpointOf));
        // Row chains (batch-claims.ts) take what the claim left of the byte budget.
        const left = bytes - claimed.reduce((sum, d) => sum + d.held_bytes, 0);
        sends = await claimedSends(this.#ctx.pool, claimed, { now, maxBytes: left, heldBytes: this.#o.maxHeldBytes });
      } catch (err) {
        log.error({ err }, 'could not claim deliveries; retrying');
        await this.#idle(this.#o.pollMs * 4);
        continue;
      }
      for (const send of sends) {
        const { webhook_id: webhookId, project_id: projectId } = send.deliveries[0]!;
        for (const d of send.deliveries) {
          this.#held.set(webhookId, (this.#held.get(webhookId) ?? 0) + 1);
          count(this.#projectHeld, projectId, 1);
          this.#heldTotal++;
          this.#heldBytes += d.held_bytes;
        }
        this.#projectOf.set(webhookId, projectId);
        const q = this.#queue.get(webhookId);
        if (q) q.push(send);
        else this.#queue.set(webhookId, [send]);
      }
      this.#pump();
      if (claimed.length < room) await this.#idle(this.#o.pollMs);
    }
  }

  /**
   * What each subscription holds here, for the claim: its claimed deliveries (counted as full
   * until there is room for perWebhook more — hysteresis, no round trip per finished delivery)
   * and what the stream has of it in this process.
   */
  #busy(): Map<string, number> {
    const full = this.#o.perWebhook * CLAIM_AHEAD;
    // A project holding its share of what may be held claims no more: the rest stays claimable
    // for the others (one project's stuck backlog must not fill this worker).
    const cap = Math.max(full, Math.floor((this.#o.concurrency * CLAIM_AHEAD) / (this.#projectHeld.size + 1)));
    const busy = new Map(
      [...this.#held].map(([id, n]) => [
        id,
        n > this.#refillAt ||
        n >= claimAhead(this.#queue.get(id)?.[0]?.deliveries[0]?.rate_limit) ||
        (this.#projectHeld.get(this.#projectOf.get(id)!) ?? 0) >= cap
          ? full
          : n,
      ]),
    );
    for (const [id, n] of this.#o.streamLoad()) busy.set(id, Math.min(full, (busy.get(id) ?? 0) + n));
    return busy;
  }

  /** Starts queued deliveries while there are slots, at most the endpoint's limit per subscription (endpoint-limits.ts) and a fair share per project. */
  #pump(): void {
    const share = fairShare(
      this.#o.concurrency,
      this.#projectRunning,
      [...this.#queue.keys()].map((id) => this.#projectOf.get(id)!),
    );
    for (const [webhookId, queue] of this.#queue) {
      const room = (this.#deps.endpointLimits?.of(webhookId) ?? this.#o.perWebhook) - this.#o.streamActive(webhookId);
      const project = this.#projectOf.get(webhookId)!;
      while (
        queue.length > 0 &&
        this.#inflight.size < this.#o.concurrency &&
        (this.#running.get(webhookId) ?? 0) < room &&
        (this.#projectRunning.get(project) ?? 0) < share
      ) {
        // The throttle before the send: no token, the request waits here (no slot held) for its turn.
        const wait = this.#deps.throttle?.take(webhookId, queue[0]!.deliveries[0]!.rate_limit) ?? 0;
        if (wait > 0) {
          this.#turn.in(wait);
          break;
        }
        this.#dispatch(queue.shift()!);
      }
      if (queue.length > 0 && (this.#running.get(webhookId) ?? 0) >= room) this.#deps.endpointLimits?.pressed(webhookId);
      if (queue.length === 0) this.#queue.delete(webhookId);
      if (this.#inflight.size >= this.#o.concurrency) return;
    }
  }

  /** Starts one request: a delivery, or a batch (one slot; its deliveries stay held until it ends). */
  #dispatch(send: ClaimedSend): void {
    const { webhook_id: webhookId, project_id: projectId, id } = send.deliveries[0]!;
    const n = send.deliveries.length;
    this.#running.set(webhookId, (this.#running.get(webhookId) ?? 0) + 1);
    count(this.#projectRunning, projectId, 1);
    const task = this.#attempt(send)
      .catch((err: unknown) =>
        this.#ctx.log.error(
          { err, delivery: id, batch: send.batchId },
          'delivery attempt failed unexpectedly; it will be retried after its lease',
        ),
      )
      .finally(() => {
        this.#inflight.delete(id);
        count(this.#running, webhookId, -1);
        count(this.#held, webhookId, -n);
        count(this.#projectRunning, projectId, -1);
        count(this.#projectHeld, projectId, -n);
        if (!this.#held.has(webhookId)) this.#projectOf.delete(webhookId);
        this.#heldTotal -= n;
        for (const d of send.deliveries) this.#heldBytes -= d.held_bytes;
        this.#pump();
        this.#o.onSlotFree?.(webhookId);
        if ((this.#held.get(webhookId) ?? 0) <= this.#refillAt) this.#nudge();
      });
    this.#inflight.set(id, task);
  }

  async #attempt(send: ClaimedSend): Promise<void> {
    const o = { leaseMs: this.#leaseMs, opened: this.#opened, stats: this.stats };
    if (send.run)
      return sendRun(
        this.#ctx,
        this.#deps,
        send,
        o,
        (one, results) => this.#record(one, results),
        () => this.#stopping,
      );
    const results = await sendClaimed(this.#ctx, this.#deps, send, o);
    if (!results) return; // the claim was lost before the send: another worker has it
    await this.#record(send, results);
  }

  /** Queues a request's results for writing (and the release of the rows they finish). */
  async #record(send: ClaimedSend, results: QueueResult[]): Promise<void> {
    for (const [i, { record, finished, retryAt }] of results.entries()) {
      if (send.deliveries[i]!.ordered && finished) this.#releasing.add(record.deliveryId);
      // A retry due before the next poll: look for it then (a row-ordered row waits on it).
      if (retryAt) this.#nudgeAt(retryAt.getTime());
      this.#results.push(record);
    }
    // The slot frees as soon as the receiver has answered; results are written behind, many per
    // statement. Until its result is written a delivery stays leased, so a crash means another
    // attempt (at least once), never a lost one. A database slower than the receivers makes
    // attempts wait for the write once MAX_UNWRITTEN results are pending.
    if (this.#results.length >= MAX_UNWRITTEN) await this.#flush();
    else void this.#flush();
  }

  /** Writes the results gathered so far; concurrent callers share one write (group commit). */
  async #flush(): Promise<void> {
    while (this.#writing) await this.#writing;
    if (this.#results.length === 0) return;
    const batch = this.#results.splice(0);
    const releases = batch.filter((r) => this.#releasing.delete(r.deliveryId)).length > 0;
    this.#writing = recordAttempts(this.#ctx.pool, batch)
      .then(() => {
        // The next change of each of these rows is claimable from this commit on: claim now
        // rather than at the next poll (a row-ordered backlog advances one change per claim).
        if (!releases) return;
        this.#nudge();
        this.#o.onOrderedFinished?.();
      })
      .catch((err: unknown) => {
        // The leases run out and these deliveries are attempted again: at least once, never lost.
        this.#ctx.log.error({ err, count: batch.length }, 'could not record delivery attempts');
      })
      .finally(() => {
        this.#writing = null;
      });
    await this.#writing;
  }

  /** Looks again at `at` (ms since the epoch) — now if it is past — unless the poll comes first. */
  #nudgeAt(at: number): void {
    const wait = at - this.#ctx.clock().getTime();
    if (wait <= 0) return this.#nudge();
    if (wait >= this.#o.pollMs) return;
    setTimeout(() => this.#nudge(), wait).unref();
  }

  #nudge(): void {
    if (this.#wake) this.#wake();
    else this.#woken = true;
  }

  async #idle(ms: number): Promise<void> {
    if (this.#stopping) return;
    if (this.#woken) {
      this.#woken = false;
      return;
    }
    await new Promise<void>((resolve) => {
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        resolve();
      }
      this.#wake = () => {
        this.#wake = null;
        done();
      };
    });
  }

  /** NOTIFY from the tailer is a hint to look now; polling is the truth. */
  async #listen(): Promise<void> {
    const onClient = (client: pg.Client | null) => {
      if (client) this.#listener = client;
      return !this.#stopping;
    };
    await listenForDueNotes(this.#ctx.pool.options.connectionString, (at) => this.#nudgeAt(at), onClient, this.#abort.signal);
  }

  async #report(): Promise<void> {
    try {
      const depth = await queueDepth(this.#ctx.pool);
      this.#ctx.log.info({ component: 'delivery', queue: depth, inflight: this.#inflight.size, ...this.stats }, 'delivery progress');
    } catch (err) {
      this.#ctx.log.warn({ err }, 'could not read the delivery queue depth');
    }
  }
}
