import { Throttle } from './throttle.js';
import type { ConnectionOptions } from 'node:tls';
import type { Context } from '../core/context.js';
import type { Queryable } from '../core/db/pool.js';
import type { DeliverySink } from '../tailer/sink.js';
import type { AttemptDeps } from './attempt.js';
import { EndpointBreakers } from './breaker.js';
import { BreakerCatchUp } from './catch-up.js';
import { openWebhookSecret } from './secret.js';
import { openHeaders } from './custom-headers.js';
import { Sender, type RequestSender } from './sender.js';
import { DeliverySenders } from './destinations/senders.js';
import { DestinationConnections } from './destinations/connections.js';
import { openCredentials } from './destinations/credentials.js';
import { countTailers } from './sql/peers.js';
import { recordThrottleWaits } from './sql/throttle-minutes.js';
import { HeldDeliveries } from './payload-bytes.js';
import { StreamDelivery } from './stream.js';
import { Targets } from './targets.js';
import { QueueWorker } from './worker.js';
import { EndpointLimits } from './endpoint-limits.js';
import { SubscriptionStateLog } from './subscription-state.js';

/** How often the throttle's waits are added to the per-minute rollup. */
const THROTTLE_RECORD_MS = 5000;

export interface DeliveryEngineOptions {
  /** Requests in flight at once, over all subscriptions (the stream and the retry queue each). */
  concurrency?: number;
  /** Requests in flight at once for one subscription (default WEBHOOK_ENDPOINT_CONCURRENCY). */
  perWebhook?: number;
  /** …raised up to this while the endpoint answers fast with a backlog (default WEBHOOK_ENDPOINT_CONCURRENCY_MAX, or perWebhook when that is given). */
  perWebhookMax?: number;
  /** An answer within this is fast (default FAST_ANSWER_MS; tests on a loaded machine pass more). */
  fastAnswerMs?: number;
  /** Deliveries the stream holds in memory before reading waits. */
  maxHeld?: number;
  /** How often the retry queue is polled when no notification arrives. */
  pollMs?: number;
  /** TLS settings for the sender (tests pass their CA). */
  tls?: ConnectionOptions;
  reportIntervalMs?: number;
  /** How long a retry-queue claim lasts from its send (default: twice the time-out plus 5 s). */
  leaseMs?: number;
  /**
   * Turns a subscription off because its receiver answered 410 Gone; true when this call did it.
   * Subscriptions are the webhook domain's: the assembly passes its store's function in.
   */
  disableSubscription: (webhookId: string, reason: string, at: Date) => Promise<boolean>;
}

/**
 * Delivery in one tailer process: the stream that the WAL reader feeds while this process leads
 * (stream.ts), and the retry queue's worker that runs in every process (worker.ts), sharing one
 * sender (keep-alive pools per endpoint), the breakers, and the subscriptions' targets.
 */
export class DeliveryEngine implements DeliverySink {
  readonly #ctx: Context;
  readonly #sender: RequestSender;
  readonly #breakers: EndpointBreakers;
  readonly #catchUp: BreakerCatchUp;
  readonly #targets: Targets;
  readonly #deps: AttemptDeps;
  readonly #worker: QueueWorker;
  readonly #o: { concurrency: number; perWebhook: number; maxHeld: number };
  readonly #endpointLimits: EndpointLimits;
  #stream: StreamDelivery | null = null;
  /** What the current stream holds, by count and payload bytes. */
  #streamHeld: HeldDeliveries | null = null;
  /** Other tailer processes on this database (leaders and standbys each hold a walgate-tailer-lock connection). */
  #peers = 0;
  #peerTimer: NodeJS.Timeout | undefined;
  #throttleTimer: NodeJS.Timeout | undefined;
  #limitsTimer: NodeJS.Timeout | undefined;

  constructor(ctx: Context, options: DeliveryEngineOptions) {
    this.#ctx = ctx;
    const { webhooks } = ctx.config;
    this.#o = {
      concurrency: options.concurrency ?? 256,
      perWebhook: options.perWebhook ?? webhooks.endpointConcurrency,
      maxHeld: options.maxHeld ?? 10_000,
    };
    const leaseMs = options.leaseMs ?? webhooks.timeoutMs * 2 + 5000;
    const max = options.perWebhookMax ?? (options.perWebhook === undefined ? webhooks.endpointConcurrencyMax : this.#o.perWebhook);
    this.#endpointLimits = new EndpointLimits(this.#o.perWebhook, Math.max(this.#o.perWebhook, max), { fastMs: options.fastAnswerMs });
    const https = new Sender({
      timeoutMs: webhooks.timeoutMs,
      allowPrivateNetworks: webhooks.allowPrivateNetworks,
      connectionsPerEndpoint: this.#endpointLimits.max,
      tls: options.tls,
      lookup: ctx.lookup,
    });
    // Subscriptions to a broker destination publish through one connection per destination.
    const brokers = new DestinationConnections(ctx.pool, (sealed) => openCredentials(ctx.secrets, sealed), {
      timeoutMs: webhooks.timeoutMs,
      allowPrivateNetworks: webhooks.allowPrivateNetworks,
      lookup: ctx.lookup,
    });
    this.#sender = new DeliverySenders(https, brokers);
    const log = ctx.log.child({ component: 'delivery' });
    this.#catchUp = new BreakerCatchUp(ctx.pool, ctx.clock, log);
    this.#breakers = new EndpointBreakers(
      ctx.pool,
      { failures: webhooks.breakerFailures, cooldownMs: webhooks.breakerCooldownMs, probeLeaseMs: leaseMs },
      ctx.clock,
      log,
      (key) => this.#catchUp.closed(key),
    );
    const openSecret = (sealed: Buffer) => openWebhookSecret(ctx.secrets, sealed);
    this.#targets = new Targets(ctx.pool, openSecret, (sealed) => openHeaders(ctx.secrets, sealed));
    this.#deps = {
      sender: this.#sender,
      breakers: this.#breakers,
      clock: ctx.clock,
      disableSubscription: options.disableSubscription,
      states: new SubscriptionStateLog(ctx.log, ctx.clock),
      throttle: new Throttle(
        () => ctx.metrics.throttleWaits.inc(),
        () => ctx.clock().getTime(),
      ),
      endpointLimits: this.#endpointLimits,
    };
    this.#worker = new QueueWorker(ctx, this.#deps, {
      concurrency: Math.max(1, Math.floor(this.#o.concurrency / 2)),
      perWebhook: this.#o.perWebhook,
      pollMs: options.pollMs ?? 250,
      reportIntervalMs: options.reportIntervalMs ?? 30_000,
      leaseMs,
      streamLoad: () => this.#stream?.load() ?? new Map(),
      maxHeldBytes: ctx.config.tailerMaxHeldBytes,
      streamBytes: () => this.#streamHeld?.bytes ?? 0,
      streamActive: (id) => this.#stream?.active(id) ?? 0,
      openSecret,
      onOrderedFinished: () => this.#stream?.orderedFinished(),
      onSlotFree: (id) => this.#stream?.slotFree(id),
      leading: () => this.#stream?.isOpen ?? false,
    });
  }

  /** DeliverySink: a stream for this leadership, its writes fenced by `fenced`. */
  open(fenced: Queryable, onFailure: (err: Error) => void): StreamDelivery {
    const { webhooks } = this.#ctx.config;
    const held = new HeldDeliveries(this.#o.maxHeld, this.#ctx.config.tailerMaxHeldBytes);
    const stream = new StreamDelivery(
      this.#ctx,
      this.#deps,
      this.#targets,
      {
        concurrency: this.#o.concurrency,
        perWebhook: this.#o.perWebhook,
        maxHeld: this.#o.maxHeld,
        held,
        parkAfterMs: webhooks.parkAfterMs,
        timeoutMs: webhooks.timeoutMs,
        retryDelaysMs: webhooks.retryDelaysMs,
        sharing: () => this.#peers > 0,
        queueActive: (id) => this.#worker.running(id),
      },
      fenced,
      // A failed write ends the tailer's session: it restarts from the durable position.
      onFailure,
    );
    this.#stream = stream; // a closed stream holds nothing: its load is empty
    this.#streamHeld = held;
    return stream;
  }

  /** Starts draining the retry queue. */
  start(): void {
    this.#worker.start();
    const count = () =>
      countTailers(this.#ctx.pool)
        .then((n) => (this.#peers = Math.max(0, n - 1)))
        .catch(() => undefined);
    void count();
    this.#peerTimer = setInterval(count, 5000);
    this.#peerTimer.unref();
    this.#throttleTimer = setInterval(() => void this.#recordThrottleWaits(), THROTTLE_RECORD_MS);
    this.#throttleTimer.unref();
    // Here, not in the stream: a process without one (a standby, a worker between sessions) still drains the queue.
    this.#limitsTimer = setInterval(() => this.#endpointLimits.sweep(), 1000);
    this.#limitsTimer.unref();
  }

  /** The throttle's waits into the rollup, for the subscriptions' health: a lost tally is only a figure, never a delivery. */
  async #recordThrottleWaits(): Promise<void> {
    const waits = this.#deps.throttle?.drainWaits() ?? [];
    await recordThrottleWaits(this.#ctx.pool, waits).catch((err: Error) =>
      this.#ctx.log.warn({ err: err.message, subscriptions: waits.length }, 'throttle waits not recorded'),
    );
  }

  /** Stops the retry queue's worker only (bounded): what it holds goes back to the queue. */
  async stopQueue(timeoutMs = 15_000): Promise<void> {
    await this.#worker.stop(timeoutMs);
  }

  /** Stops the retry queue's worker, then the sender. The tailer closes its stream itself, first. */
  async stop(timeoutMs = 15_000): Promise<void> {
    clearInterval(this.#peerTimer);
    clearInterval(this.#throttleTimer);
    clearInterval(this.#limitsTimer);
    this.#catchUp.stop();
    await this.#worker.stop(timeoutMs);
    await this.#recordThrottleWaits();
    await this.#sender.close().catch(() => undefined);
  }

  breakerStates(): ReturnType<EndpointBreakers['states']> {
    return this.#breakers.states();
  }

  get stats() {
    const stream = this.#stream;
    return { stream: stream ? { ...stream.stats, batches: stream.batches } : null, queue: this.#worker.stats };
  }
}
