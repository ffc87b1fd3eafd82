import { delayBefore, maxAttempts } from './schedule.js';

// What a receiver's answer means for the delivery, as Standard Webhooks asks: 2xx delivered;
// 410 Gone disables the subscription after this one attempt; 429 / 503 with Retry-After delays
// the next attempt to at least that (capped at an hour; it still counts as an attempt); anything
// else follows the retry schedule until its attempts are spent. Pure: the engine acts on it.

export type Outcome = { kind: 'delivered' } | { kind: 'retry'; notBefore: Date } | { kind: 'dead' } | { kind: 'disable'; reason: string };

export interface Answer {
  /** The receiver's status; null when there was no answer (network error, time-out). */
  status: number | null;
  /** The answer's headers (lower-case names), when there was one. */
  headers?: Readonly<Record<string, string | string[] | undefined>>;
}

/** The longest wait a Retry-After may ask for. */
export const RETRY_AFTER_CAP_MS = 60 * 60 * 1000;

/**
 * Classifies the answer to attempt `attempt` (1-based) made at `now`, with the subscription's
 * retry schedule (WEBHOOK_RETRY_DELAYS_MS).
 */
export function classifyAnswer(
  answer: Answer,
  attempt: number,
  now: Date,
  delaysMs: readonly number[],
  random: () => number = Math.random,
): Outcome {
  const { status } = answer;
  if (status !== null && status >= 200 && status < 300) return { kind: 'delivered' };
  if (status === 410) return { kind: 'disable', reason: 'the receiver answered 410 Gone' };
  if (attempt >= maxAttempts(delaysMs)) return { kind: 'dead' };
  let wait = delayBefore(delaysMs, attempt + 1, random) ?? 0;
  if (status === 429 || status === 503) {
    const asked = retryAfterMs(header(answer.headers, 'retry-after'), now);
    if (asked !== null) wait = Math.max(wait, Math.min(asked, RETRY_AFTER_CAP_MS));
  }
  return { kind: 'retry', notBefore: new Date(now.getTime() + wait) };
}

/**
 * Retry-After (RFC 9110 §10.2.3): delay-seconds or an HTTP-date. Returns the wait in ms from
 * `now` (0 for a date already past), or null when the value is neither.
 */
export function retryAfterMs(value: string | undefined, now: Date): number | null {
  if (value === undefined) return null;
  const v = value.trim();
  if (/^\d+$/.test(v)) return Math.min(Number(v), RETRY_AFTER_CAP_MS / 1000 + 1) * 1000;
  // An HTTP-date names its weekday and month in letters; Date.parse alone also takes bare numbers.
  if (!/^[A-Za-z]{3},? /.test(v)) return null;
  const at = Date.parse(v);
  if (Number.isNaN(at)) return null;
  return Math.max(0, at - now.getTime());
}

function header(headers: Answer['headers'], name: string): string | undefined {
  const v = headers?.[name];
  return Array.isArray(v) ? v[0] : v;
}
