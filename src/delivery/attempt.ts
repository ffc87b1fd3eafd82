import type { Throttle } from './throttle.js';
import type { EndpointLimits } from './endpoint-limits.js';
import type { Clock } from '../core/clock.js';
import type { Context } from '../core/context.js';
import type { Operation } from '../tailer/sink.js';
import type { BreakerKey, BreakerState, EndpointBreakers } from './breaker.js';
import { stateAfterAttempt, type SubscriptionStateLog } from './subscription-state.js';
import { classifyAnswer } from './outcome.js';
import type { RequestSender, SendResult } from './sender.js';
import { signatureHeaders } from './signing.js';
import { isTestEvent, TEST_EVENT_HEADER } from './custom-headers.js';
import { USER_AGENT } from './sender.js';
import type { AttemptResult } from './sql/queue.js';

// One attempt of one delivery, the same from the stream and from the retry queue: through the
// endpoint's breaker, signed over the exact bytes, POSTed; and what follows from the answer.

export interface AttemptRequest {
  /** The breaker's key: the subscription's project, environment and exact URL. */
  endpoint: BreakerKey;
  /** The connection pool it goes through: its subscription's own (sender.ts). */
  pool: string;
  url: URL;
  /** Signing secrets, newest first. */
  secrets: string[];
  /** The event id, or a batch's id (batch.ts): `webhook-id` and `X-Service-Delivery`. */
  eventId: string;
  /** `X-Service-Event`: the change's operation, or BATCH for a batch of changes. */
  operation: Operation | 'BATCH';
  body: string;
  /** The subscription's custom request headers (names lower case). */
  headers?: Readonly<Record<string, string>>;
}

/** A request that was sent: the receiver's answer, or its failure (network error, time-out). */
export type SentAttempt = {
  kind: 'sent';
  result: SendResult;
  startedAt: Date;
  /** The request's headers as the delivery log keeps them: no signature, custom values masked. */
  requestHeaders: Record<string, string>;
  /** The endpoint's breaker after the attempt, as this process knows it. */
  breaker: BreakerState;
};

/**
 * No request: the endpoint's breaker holds it (open, or its one probe is out). The breaker pauses;
 * it never spends an attempt (the seed: "deliveries to that endpoint pause for 2 minutes, then
 * resume"). The delivery waits until `until`, or less when the breaker closes (catch-up.ts).
 */
export type WaitedAttempt = { kind: 'waited'; until: Date; startedAt: Date };

/** What the delivery log shows instead of a custom header's value. */
export const HIDDEN = '[hidden]';

export type AttemptOutcome = SentAttempt | WaitedAttempt;

/** The error a wait on an open breaker records, and a delivery dead after waiting too long (DESIGN: Webhooks). */
export const BREAKER_OPEN = 'breaker open';

export interface AttemptDeps {
  sender: RequestSender;
  breakers: EndpointBreakers;
  clock: Clock;
  /** Turns a subscription off (410 Gone); true when this call did it. The assembly passes the webhook store's. */
  disableSubscription: (webhookId: string, reason: string, at: Date) => Promise<boolean>;
  /** Logs each change of a subscription's delivery state (subscription-state.ts). */
  states?: SubscriptionStateLog;
  /** The throttles of subscriptions with a rateLimit: a gate before a send, asked by the stream and the worker (throttle.ts). */
  throttle?: Throttle;
  /** Requests in flight per subscription, raised while an endpoint with a backlog answers fast (endpoint-limits.ts). */
  endpointLimits?: EndpointLimits;
}

export async function attempt(deps: AttemptDeps, r: AttemptRequest): Promise<AttemptOutcome> {
  let admission = await deps.breakers.admit(r.endpoint);
  const startedAt = deps.clock();
  // Custom headers first: walgate's own come after and win (reserved names are refused anyway).
  const own: Record<string, string> = { 'x-service-event': r.operation, 'x-service-delivery': r.eventId };
  if (isTestEvent(r.eventId)) own[TEST_EVENT_HEADER] = 'true';
  const signed = signatureHeaders(r.secrets, r.eventId, r.body, Math.floor(startedAt.getTime() / 1000));
  const headers = { ...r.headers, ...own, ...signed };
  // Checked again with nothing awaited before the request starts: a failure that opened the
  // breaker while this one was being admitted stops it here.
  admission = deps.breakers.confirm(r.endpoint, admission);
  const requestHeaders: Record<string, string> = { 'content-type': 'application/json', 'user-agent': USER_AGENT };
  for (const name of Object.keys(r.headers ?? {})) requestHeaders[name] = HIDDEN;
  Object.assign(requestHeaders, own, { 'webhook-id': signed['webhook-id']!, 'webhook-timestamp': signed['webhook-timestamp']! });
  if (admission.kind === 'wait') return { kind: 'waited', until: admission.until, startedAt };
  const result = await deps.sender.post(r.pool, r.url, headers, r.body);
  // The next attempt follows the schedule; if it comes due while the breaker is open it waits
  // (no attempt spent) and goes when the breaker closes.
  if (result.ok) await deps.breakers.recordSuccess(r.endpoint, admission.probe);
  else await deps.breakers.recordFailure(r.endpoint, admission.probe);
  return { kind: 'sent', result, startedAt, requestHeaders, breaker: deps.breakers.state(r.endpoint) };
}

export interface NextStep {
  status: 'delivered' | 'retrying' | 'dead';
  nextAttemptAt: Date | null;
  /** The receiver asked for no more (410 Gone): the subscription is to be disabled, with this reason. */
  disable: string | null;
}

/** Where a delivery stands after its attempt number `attemptNo` answered `result` (outcome.ts decides). */
export function nextStep(result: SendResult, attemptNo: number, delaysMs: readonly number[], now: Date): NextStep {
  // A broker's acknowledgement has no HTTP status (destinations/publisher.ts): `ok` is the answer.
  // For HTTP, ok is exactly a 2xx, which classifyAnswer calls delivered too.
  if (result.ok) return { status: 'delivered', nextAttemptAt: null, disable: null };
  const outcome = classifyAnswer({ status: result.status, headers: { 'retry-after': result.retryAfter } }, attemptNo, now, delaysMs);
  if (outcome.kind === 'delivered') return { status: 'delivered', nextAttemptAt: null, disable: null };
  if (outcome.kind === 'retry') {
    return { status: 'retrying', nextAttemptAt: outcome.notBefore, disable: null };
  }
  return { status: 'dead', nextAttemptAt: null, disable: outcome.kind === 'disable' ? outcome.reason : null };
}

/** The receiver asked for no more deliveries (410 Gone): the subscription stops at this commit. */
export async function disable(ctx: Context, deps: AttemptDeps, webhookId: string, reason: string, at: Date): Promise<void> {
  if (!(await deps.disableSubscription(webhookId, reason, at))) return;
  ctx.metrics.webhooksDisabled.inc();
  ctx.log.warn({ component: 'delivery', webhook: webhookId, reason }, 'subscription disabled by its receiver');
}

/** What an answered attempt concluded, and when. */
export interface Concluded {
  step: NextStep;
  at: Date;
}

/**
 * What follows from an answer, the same for the stream and the retry queue: the delivery's next
 * step; a 410 disables the subscription here; the delivery metrics.
 */
export async function conclude(
  ctx: Context,
  deps: AttemptDeps,
  sent: SentAttempt,
  // `deliveries`: how many the request carried (a batch: batch.ts), each counted as finished.
  a: { webhookId: string; attemptNo: number; delaysMs: readonly number[]; committedAt: Date; deliveries?: number },
): Promise<Concluded> {
  const { result } = sent;
  const at = ctx.clock();
  const step = nextStep(result, a.attemptNo, a.delaysMs, at);
  if (step.disable) await disable(ctx, deps, a.webhookId, step.disable, at);
  const state = stateAfterAttempt({ ok: result.ok, disabled: step.disable !== null, breaker: sent.breaker });
  deps.states?.observe(a.webhookId, state, step.disable ?? (result.ok ? 'delivered' : (result.error ?? `HTTP ${result.status}`)));
  const m = ctx.metrics;
  m.deliveriesFinished.inc({ status: step.status }, a.deliveries ?? 1);
  m.attemptDuration.observe({ outcome: result.ok ? 'success' : 'failure' }, result.durationMs / 1000);
  deps.endpointLimits?.answered(a.webhookId, result.ok, result.durationMs);
  if (result.ok) m.commitToDelivery.observe(Math.max(0, at.getTime() - a.committedAt.getTime()) / 1000);
  return { step, at };
}

/** What a delivery keeps of its request (WEBHOOK_KEEP_PAYLOADS): the body as sent and the headers. */
export interface KeptRequest {
  payload: string;
  requestHeaders: Record<string, string>;
  /** The answer's headers; null without an answer. */
  responseHeaders: Record<string, string> | null;
}

export function keptRequest(keep: boolean, body: string, sent: SentAttempt): KeptRequest | null {
  return keep ? { payload: body, requestHeaders: sent.requestHeaders, responseHeaders: sent.result.responseHeaders ?? null } : null;
}

/** The attempt as the retry queue records it on its leased row (store.ts recordAttempts). */
export function attemptRecord(
  deliveryId: string,
  lease: Date,
  attemptNo: number,
  sent: SentAttempt,
  { step, at }: Concluded,
  kept: KeptRequest | null = null,
): AttemptResult {
  const { result } = sent;
  return {
    deliveryId,
    lease,
    kind: 'request',
    attempt: attemptNo,
    spent: attemptNo,
    startedAt: sent.startedAt,
    durationMs: result.durationMs,
    httpStatus: result.status,
    error: result.error,
    responseBody: result.responseBody,
    status: step.status,
    nextAttemptAt: step.nextAttemptAt,
    deliveredAt: result.ok ? at : null,
    kept,
  };
}

/**
 * A wait as the retry queue records it: no attempt spent, the delivery due again when the breaker
 * lets a request go (sooner when it closes: the wait is a retry slot, catch-up.ts) — or dead with
 * `breaker open` once it has waited past its bound (breakerWaitBound), so every delivery ends.
 */
export function waitRecord(
  d: { deliveryId: string; lease: Date; spent: number; scheduleStartedAt: Date },
  waited: WaitedAttempt,
  boundMs: number,
): AttemptResult {
  const expired = waited.until.getTime() - d.scheduleStartedAt.getTime() > boundMs;
  return {
    deliveryId: d.deliveryId,
    lease: d.lease,
    kind: 'wait',
    attempt: d.spent + 1,
    spent: d.spent,
    startedAt: waited.startedAt,
    durationMs: 0,
    httpStatus: null,
    error: BREAKER_OPEN,
    responseBody: null,
    status: expired ? 'dead' : d.spent > 0 ? 'retrying' : 'pending',
    nextAttemptAt: expired ? null : waited.until,
    deliveredAt: null,
  };
}
