// The retry schedule: attempt n waits WEBHOOK_RETRY_DELAYS_MS[n-1] (± 20 %, so that deliveries
// that failed together do not all come back at the same instant); there are as many attempts as
// delays.

const JITTER = 0.2;

export function maxAttempts(delaysMs: readonly number[]): number {
  return delaysMs.length;
}

/** The wait before attempt `attempt` (1-based); undefined when there is no such attempt. */
export function delayBefore(delaysMs: readonly number[], attempt: number, random: () => number = Math.random): number | undefined {
  const base = delaysMs[attempt - 1];
  if (base === undefined) return undefined;
  return Math.max(0, Math.round(base * (1 - JITTER + 2 * JITTER * random())));
}

/**
 * How long a delivery may wait on an open breaker, from the start of its schedule, before it is
 * dead (`breaker open`): its schedule's whole span plus two cool-downs (≈ 9.6 min with the
 * defaults) unless WEBHOOK_BREAKER_MAX_WAIT_MS says otherwise. The breaker pauses deliveries, it
 * does not spend their attempts; this bound is what still makes every delivery end.
 */
export function breakerWaitBound(delaysMs: readonly number[], cooldownMs: number, configured?: number): number {
  if (configured !== undefined) return configured;
  return delaysMs.reduce((a, b) => a + b, 0) + 2 * cooldownMs;
}
