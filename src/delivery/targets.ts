import type { RateLimitSettings } from './throttle.js';
import type { Pool } from '../core/db/pool.js';
import type { CapturedDelivery, CapturedEvent } from '../tailer/sink.js';
import type { AttemptRequest } from './attempt.js';
import type { BreakerKey } from './breaker.js';
import { buildPayload } from './payload.js';
import { readTarget } from './sql/targets.js';
import { batchBody, type BatchSettings } from './batch.js';

// Where a subscription's deliveries go and how they are signed, as walgate.webhooks says now
// (the retry queue joins the same row when it claims). The stream asks per delivery, so this is a
// cache; the tailer tells it when a subscription row changes (its change comes through the WAL),
// and the row read then is at least as new as that change.

export interface Target {
  webhookId: string;
  projectId: string;
  environment: string;
  url: URL;
  /** The breaker's key: project, environment and the exact URL. */
  endpoint: BreakerKey;
  active: boolean;
  /** Signing secrets, newest first: the previous one too while its grace after a rotation lasts. */
  secrets: string[];
  /** When the previous secret stops signing (the cached target is read again then); null without one. */
  secretsChangeAt: Date | null;
  /** Custom request headers, sent on every attempt. */
  headers: Record<string, string>;
  /**
   * 'failures': a first-attempt success is counted, not written as a history row (journal.ts).
   * Read here, with what the stream looks up per delivery anyway: no per-delivery cost.
   */
  history: 'full' | 'failures';
  /** Batched delivery (maxEvents 1: off): the stream's lanes gather by it (batch.ts). */
  batch: BatchSettings;
  /** Its retry schedule (its own or its environment's); null: the platform's. */
  retryDelaysMs: number[] | null;
  /** Its throttle (throttle.ts); null: none. */
  rateLimit: RateLimitSettings | null;
}

/** The stream's request for a change to a subscription: its payload as the target selects, signed with its secrets. */
export function targetRequest(target: Target, delivery: CapturedDelivery, event: CapturedEvent): AttemptRequest {
  return {
    endpoint: target.endpoint,
    pool: delivery.webhookId,
    url: target.url,
    secrets: target.secrets,
    eventId: event.id,
    operation: event.operation,
    body: targetBody(target, delivery, event),
    headers: target.headers,
  };
}

/** The stream's request for a batch of changes to a subscription (batch.ts): their bodies as they would go alone, in order. */
export function targetBatchRequest(target: Target, batchId: string, bodies: readonly string[]): AttemptRequest {
  return {
    endpoint: target.endpoint,
    pool: target.webhookId,
    url: target.url,
    secrets: target.secrets,
    eventId: batchId,
    operation: 'BATCH',
    body: batchBody(bodies),
    headers: target.headers,
  };
}

/** A delivery's body as the target renders it (the same bytes alone or in a batch). */
export function targetBody(target: Target, delivery: CapturedDelivery, event: CapturedEvent): string {
  return buildPayload(
    { projectId: target.projectId, environment: target.environment, select: delivery.select },
    event,
    delivery.previousEventId ?? null,
  );
}

export class Targets {
  readonly #cache = new Map<string, Target | null>();
  readonly #loading = new Map<string, Promise<Target | null>>();
  #generation = 0;

  constructor(
    private readonly pool: Pool,
    private readonly openSecret: (sealed: Buffer) => string,
    private readonly openHeaders: (sealed: Buffer | null) => Record<string, string> = () => ({}),
  ) {}

  /** The target if known (null: the subscription is gone); undefined when it must be loaded. */
  peek(webhookId: string): Target | null | undefined {
    const target = this.#cache.get(webhookId);
    if (target?.secretsChangeAt && target.secretsChangeAt.getTime() <= Date.now()) {
      this.#cache.delete(webhookId);
      return undefined;
    }
    return target;
  }

  load(webhookId: string): Promise<Target | null> {
    let p = this.#loading.get(webhookId);
    if (!p) {
      const generation = this.#generation;
      p = readTarget(this.pool, webhookId)
        .then((r) => {
          const target: Target | null = r
            ? {
                webhookId,
                projectId: r.project_id,
                environment: r.environment,
                url: new URL(r.url),
                endpoint: { projectId: r.project_id, environment: r.environment, url: r.url },
                active: r.active,
                secrets: [r.secret, ...(r.previous_secret ? [r.previous_secret] : [])].map((sealed) => this.openSecret(sealed)),
                secretsChangeAt: r.previous_secret_until,
                headers: this.openHeaders(r.header_values),
                history: r.history,
                batch: r.batch,
                retryDelaysMs: r.retry_delays_ms,
                rateLimit: r.rate_limit,
              }
            : null;
          // A change announced while this read ran may not be in it: keep it only if none was.
          if (generation === this.#generation) this.#cache.set(webhookId, target);
          return target;
        })
        .finally(() => this.#loading.delete(webhookId));
      this.#loading.set(webhookId, p);
    }
    return p;
  }

  /** The subscription row changed (seen in the WAL): read it again when next needed. */
  changed(webhookId: string): void {
    this.#generation++;
    this.#cache.delete(webhookId);
    this.#loading.delete(webhookId);
  }

  /** Any row may have changed unseen (a delivery worker that takes a partition): read each again when next needed. */
  forgetAll(): void {
    this.#generation++;
    this.#cache.clear();
    this.#loading.clear();
  }
}
