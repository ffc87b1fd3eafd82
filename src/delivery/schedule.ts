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
