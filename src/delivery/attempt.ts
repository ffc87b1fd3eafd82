import type { Clock } from '../core/clock.js';
import type { Operation } from '../tailer/sink.js';
import type { EndpointBreakers } from './breaker.js';
import { delayBefore, maxAttempts } from './schedule.js';
import type { SendResult, Sender } from './sender.js';
import { signatureHeaders } from './signing.js';

// One attempt of one delivery, the same from the stream and from the retry queue: through the
// endpoint's breaker, signed over the exact bytes, POSTed; and what follows from the answer.

export interface AttemptRequest {
  url: URL;
  /** Signing secrets, newest first. */
  secrets: string[];
  eventId: string;
  operation: Operation;
  body: string;
}

export type AttemptOutcome =
  | { kind: 'wait'; until: Date }
  | { kind: 'sent'; result: SendResult; startedAt: Date; openedUntil: Date | null };

export interface AttemptDeps {
  sender: Sender;
  breakers: EndpointBreakers;
  clock: Clock;
}

export function breakerKey(url: URL): string {
  return url.origin;
}

export async function attempt(deps: AttemptDeps, r: AttemptRequest): Promise<AttemptOutcome> {
  const key = breakerKey(r.url);
  const admission = await deps.breakers.admit(key);
  if (admission.kind === 'wait') return { kind: 'wait', until: admission.until };
  const startedAt = deps.clock();
  const headers = {
    'x-service-event': r.operation,
    'x-service-delivery': r.eventId,
    ...signatureHeaders(r.secrets[0]!, r.eventId, r.body, Math.floor(startedAt.getTime() / 1000)),
  };
  let result: SendResult;
  try {
    result = await deps.breakers.fire(key, () => deps.sender.post(r.url, headers, r.body));
  } catch {
    // The local breaker opened meanwhile (another delivery to this endpoint just failed): wait.
    return { kind: 'wait', until: new Date(deps.clock().getTime() + 1000) };
  }
  const openedUntil = await deps.breakers.record(key, result.ok, admission.probe);
  return { kind: 'sent', result, startedAt, openedUntil };
}

export interface NextStep {
  status: 'delivered' | 'retrying' | 'dead';
  nextAttemptAt: Date | null;
}

/** Where a delivery stands after its attempt number `attemptNo` answered `result`. */
export function nextStep(result: SendResult, attemptNo: number, delaysMs: readonly number[], openedUntil: Date | null, now: Date): NextStep {
  if (result.ok) return { status: 'delivered', nextAttemptAt: null };
  if (attemptNo >= maxAttempts(delaysMs)) return { status: 'dead', nextAttemptAt: null };
  let next = now.getTime() + (delayBefore(delaysMs, attemptNo + 1) ?? 0);
  if (openedUntil && openedUntil.getTime() > next) next = openedUntil.getTime();
  return { status: 'retrying', nextAttemptAt: new Date(next) };
}
