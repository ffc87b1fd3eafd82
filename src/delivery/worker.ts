import type { ConnectionOptions } from 'node:tls';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import type { Context } from '../core/context.js';
import { keepReconnecting } from '../core/db/reconnect.js';
import { DELIVERIES_CHANNEL } from '../tailer/outbox.js';
import { openWebhookSecret } from './secret.js';
import { EndpointBreakers, type BreakerKey, type BreakerState } from './breaker.js';
import { classifyAnswer } from './outcome.js';
import { renderPayload } from './payload.js';
import { Sender } from './sender.js';
import { signatureHeaders } from './signing.js';
import { claimDue, postpone, queueDepth, recordAttempts, type AttemptResult, type ClaimedDelivery } from './store.js';

export interface DeliveryWorkerOptions {
  /** Attempts in flight at once, over all endpoints. */
  concurrency?: number;
  /** In flight at once for one subscription (no head-of-line blocking of the others). */
  perWebhook?: number;
  /** How often to look for due deliveries when no notification arrives. */
  pollMs?: number;
  /** TLS settings for the sender (tests pass their CA). */
  tls?: ConnectionOptions;
  /** How often queue depth and counts are logged. */
  reportIntervalMs?: number;
  /** How long a claim lasts (default: twice the time-out plus 5 s). */
  leaseMs?: number;
  /**
   * Turns a subscription off because its receiver answered 410 Gone; true when this call did it.
   * Subscriptions are the webhook domain's: the assembly passes its store's function in.
   */
  disableSubscription: DisableSubscription;
}

export type DisableSubscription = (webhookId: string, reason: string, at: Date) => Promise<boolean>;

/**
 * Sends due deliveries: claim (a lease, see store.ts) → admit through the endpoint's breaker →
 * sign and POST → record the attempt and the next due time. Every attempt and schedule is in
 * Postgres, so a restart resumes where things stood; a worker killed mid-attempt leaves a lease
 * that expires, and the delivery is attempted again (at least once).
 */
export class DeliveryWorker {
  readonly #ctx: Context;
  readonly #o: Required<Omit<DeliveryWorkerOptions, 'tls' | 'leaseMs'>>;
  readonly #sender: Sender;
  readonly #breakers: EndpointBreakers;
  readonly #inflight = new Map<string, Promise<void>>();
  /** Claimed deliveries per subscription: in flight, and waiting for a slot (claimed ahead). */
  readonly #held = new Map<string, number>();
  readonly #running = new Map<string, number>();
  readonly #queue = new Map<string, ClaimedDelivery[]>();
  #heldTotal = 0;
  readonly #results: AttemptResult[] = [];
  readonly #secrets = new Map<string, string>();
  #writing: Promise<void> | null = null;
  #wake: (() => void) | null = null;
  /** A wake-up that came while the loop was busy: the next idle returns at once. */
  #woken = false;
  #listener: pg.Client | null = null;
  #loop: Promise<void> | undefined;
  #reporter: NodeJS.Timeout | undefined;
  #stopping = false;
  /** Aborted by stop(): ends the LISTEN reconnect loop, also mid-backoff. */
  readonly #abort = new AbortController();
  readonly #leaseMs: number;
  stats = { attempts: 0, delivered: 0, failed: 0, dead: 0, postponed: 0 };

  constructor(ctx: Context, options: DeliveryWorkerOptions) {
    this.#ctx = ctx;
    const { tls: _tls, leaseMs: _lease, ...rest } = options;
    this.#o = { concurrency: 128, perWebhook: 32, pollMs: 250, reportIntervalMs: 30_000, ...rest };
    const { webhooks } = ctx.config;
    this.#leaseMs = options.leaseMs ?? webhooks.timeoutMs * 2 + 5000;
    this.#sender = new Sender({
      timeoutMs: webhooks.timeoutMs,
      allowPrivateNetworks: webhooks.allowPrivateNetworks,
      connectionsPerOrigin: this.#o.perWebhook,
      tls: options.tls,
      lookup: ctx.lookup,
    });
    this.#breakers = new EndpointBreakers(
      ctx.pool,
      { failures: webhooks.breakerFailures, cooldownMs: webhooks.breakerCooldownMs, probeLeaseMs: this.#leaseMs },
      ctx.clock,
      ctx.log.child({ component: 'delivery' }),
    );
  }

  /** Held deliveries of one subscription at which it is topped up again. */
  get #refillAt(): number {
    return this.#o.perWebhook * (CLAIM_AHEAD - 1);
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
    const unsent = [...this.#queue.values()].flat().map((d) => d.id);
    this.#queue.clear();
    await postpone(this.#ctx.pool, unsent, this.#ctx.clock()).catch(() => undefined);
    const drained = Promise.all(this.#inflight.values());
    await Promise.race([drained, sleep(timeoutMs)]);
    await this.#flush();
    clearInterval(this.#reporter);
    const listener = this.#listener;
    this.#listener = null;
    await listener?.end().catch(() => undefined);
    await this.#sender.close().catch(() => undefined);
  }

  breakerStates(): Array<BreakerKey & { state: BreakerState }> {
    return this.#breakers.states();
  }

  async #run(): Promise<void> {
    const log = this.#ctx.log.child({ component: 'delivery' });
    // Claims run ahead of sending (up to CLAIM_AHEAD times the concurrency), so a slot that frees up starts
    // the next delivery at once instead of waiting for a round trip to Postgres.
    const capacity = this.#o.concurrency * CLAIM_AHEAD;
    while (!this.#stopping) {
      const room = Math.min(capacity - this.#heldTotal, MAX_CLAIM);
      if (room <= this.#o.concurrency / 4) {
        await this.#idle(this.#o.pollMs);
        continue;
      }
      let claimed: ClaimedDelivery[];
      try {
        const now = this.#ctx.clock();
        claimed = await claimDue(this.#ctx.pool, {
          now,
          leaseUntil: new Date(now.getTime() + this.#leaseMs),
          limit: room,
          perWebhook: this.#o.perWebhook * CLAIM_AHEAD,
          // A subscription is topped up once there is room for perWebhook more (hysteresis: no
          // round trip per finished delivery); until then it counts as full.
          inflight: new Map([...this.#held].map(([id, n]) => [id, n > this.#refillAt ? this.#o.perWebhook * CLAIM_AHEAD : n])),
        });
        if (claimed.length) await this.#breakers.refresh(claimed.map(endpointOf));
      } catch (err) {
        log.error({ err }, 'could not claim deliveries; retrying');
        await this.#idle(this.#o.pollMs * 4);
        continue;
      }
      for (const d of claimed) {
        this.#held.set(d.webhook_id, (this.#held.get(d.webhook_id) ?? 0) + 1);
        this.#heldTotal++;
        const q = this.#queue.get(d.webhook_id);
        if (q) q.push(d);
        else this.#queue.set(d.webhook_id, [d]);
      }
      this.#pump();
      if (claimed.length < room) await this.#idle(this.#o.pollMs);
    }
  }

  /** Starts queued deliveries while there are slots, at most perWebhook per subscription. */
  #pump(): void {
    for (const [webhookId, queue] of this.#queue) {
      while (queue.length > 0 && this.#inflight.size < this.#o.concurrency && (this.#running.get(webhookId) ?? 0) < this.#o.perWebhook) {
        this.#dispatch(queue.shift()!);
      }
      if (queue.length === 0) this.#queue.delete(webhookId);
      if (this.#inflight.size >= this.#o.concurrency) return;
    }
  }

  #dispatch(d: ClaimedDelivery): void {
    this.#running.set(d.webhook_id, (this.#running.get(d.webhook_id) ?? 0) + 1);
    const task = this.#attempt(d)
      .catch((err: unknown) => this.#ctx.log.error({ err, delivery: d.id }, 'delivery attempt failed unexpectedly; it will be retried after its lease'))
      .finally(() => {
        this.#inflight.delete(d.id);
        decrement(this.#running, d.webhook_id);
        decrement(this.#held, d.webhook_id);
        this.#heldTotal--;
        this.#pump();
        if ((this.#held.get(d.webhook_id) ?? 0) <= this.#refillAt) this.#nudge();
      });
    this.#inflight.set(d.id, task);
  }

  async #attempt(d: ClaimedDelivery): Promise<void> {
    const endpoint = endpointOf(d);
    let admission = await this.#breakers.admit(endpoint);
    const secrets = d.previous_secret ? [this.#secret(d.secret), this.#secret(d.previous_secret)] : [this.#secret(d.secret)];
    const body = renderPayload(d);
    const startedAt = this.#ctx.clock();
    const headers = {
      'x-service-event': d.operation,
      'x-service-delivery': d.event_id,
      ...signatureHeaders(secrets, d.event_id, body, Math.floor(startedAt.getTime() / 1000)),
    };
    // Checked again with nothing awaited before the request starts: a failure that opened the
    // breaker while this one was being admitted stops it here.
    admission = this.#breakers.confirm(endpoint, admission);
    if (admission.kind === 'wait') {
      this.stats.postponed++;
      await postpone(this.#ctx.pool, [d.id], admission.until);
      return;
    }
    const result = await this.#sender.post(new URL(d.url), headers, body);
    const attempt = d.attempts + 1;
    const openedUntil = result.ok
      ? (await this.#breakers.recordSuccess(endpoint, admission.probe), null)
      : await this.#breakers.recordFailure(endpoint, admission.probe);
    const now = this.#ctx.clock();
    this.stats.attempts++;
    const outcome = classifyAnswer({ status: result.status, headers: { 'retry-after': result.retryAfter } }, attempt, now, this.#ctx.config.webhooks.retryDelaysMs);
    let status: AttemptResult['status'];
    let nextAttemptAt: Date | null = null;
    if (outcome.kind === 'delivered') {
      status = 'delivered';
      this.stats.delivered++;
    } else if (outcome.kind === 'retry') {
      status = 'retrying';
      this.stats.failed++;
      nextAttemptAt = openedUntil && openedUntil > outcome.notBefore ? openedUntil : outcome.notBefore;
    } else {
      status = 'dead';
      this.stats.dead++;
      if (outcome.kind === 'disable') await this.#disable(d, outcome.reason, now);
    }
    const m = this.#ctx.metrics;
    m.deliveriesFinished.inc({ status });
    m.attemptDuration.observe({ outcome: result.ok ? 'success' : 'failure' }, result.durationMs / 1000);
    if (result.ok) m.commitToDelivery.observe(Math.max(0, now.getTime() - d.committed_at.getTime()) / 1000);
    this.#results.push({
      deliveryId: d.id,
      lease: d.lease,
      attempt,
      startedAt,
      durationMs: result.durationMs,
      httpStatus: result.status,
      error: result.error,
      responseBody: result.responseBody,
      status,
      nextAttemptAt,
      deliveredAt: result.ok ? now : null,
    });
    // The slot frees as soon as the receiver has answered; results are written behind, many per
    // statement. Until its result is written a delivery stays leased, so a crash means another
    // attempt (at least once), never a lost one. A database slower than the receivers makes
    // attempts wait for the write once MAX_UNWRITTEN results are pending.
    if (this.#results.length >= MAX_UNWRITTEN) await this.#flush();
    else void this.#flush();
  }

  /** The receiver asked for no more deliveries (410 Gone): the subscription stops at this commit. */
  async #disable(d: ClaimedDelivery, reason: string, at: Date): Promise<void> {
    if (!(await this.#o.disableSubscription(d.webhook_id, reason, at))) return;
    this.#ctx.metrics.webhooksDisabled.inc();
    this.#ctx.log.warn({ component: 'delivery', webhook: d.webhook_id, project: d.project_id, environment: d.environment, reason }, 'subscription disabled by its receiver');
  }

  /** A subscription's signing secret, decrypted once per sealed value (a rotation seals a new one). */
  #secret(sealed: Buffer): string {
    const key = sealed.toString('base64');
    let secret = this.#secrets.get(key);
    if (secret === undefined) {
      if (this.#secrets.size >= 10_000) this.#secrets.clear();
      secret = openWebhookSecret(this.#ctx.secrets, sealed);
      this.#secrets.set(key, secret);
    }
    return secret;
  }

  /** Writes the results gathered so far; concurrent callers share one write (group commit). */
  async #flush(): Promise<void> {
    while (this.#writing) await this.#writing;
    if (this.#results.length === 0) return;
    const batch = this.#results.splice(0);
    this.#writing = recordAttempts(this.#ctx.pool, batch)
      .catch((err: unknown) => {
        // The leases run out and these deliveries are attempted again: at least once, never lost.
        this.#ctx.log.error({ err, count: batch.length }, 'could not record delivery attempts');
      })
      .finally(() => {
        this.#writing = null;
      });
    await this.#writing;
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
    await keepReconnecting(
      async () => {
        const client = new pg.Client({ connectionString: this.#ctx.pool.options.connectionString, application_name: 'walgate-delivery-listen' });
        try {
          const ended = new Promise<void>((resolve) => {
            client.on('error', () => resolve());
            client.on('end', () => resolve());
          });
          await client.connect();
          client.on('notification', () => this.#nudge());
          await client.query(`LISTEN ${DELIVERIES_CHANNEL}`);
          this.#listener = client;
          if (this.#stopping) return;
          await ended;
        } finally {
          await client.end().catch(() => undefined);
        }
      },
      { signal: this.#abort.signal, minMs: 500, maxMs: 10_000 },
    );
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

function decrement(counts: Map<string, number>, key: string): void {
  const n = (counts.get(key) ?? 1) - 1;
  if (n <= 0) counts.delete(key);
  else counts.set(key, n);
}

/** Deliveries claimed in one round trip at most. */
const MAX_CLAIM = 256;

/** Attempt results waiting to be written before attempts wait for the write. */
const MAX_UNWRITTEN = 1000;

/** How far claims run ahead of sending, in multiples of the in-flight caps. */
const CLAIM_AHEAD = 4;

/** The breaker's key: per tenant and exact URL, never per host. */
function endpointOf(d: ClaimedDelivery): BreakerKey {
  return { projectId: d.project_id, environment: d.environment, url: d.url };
}
