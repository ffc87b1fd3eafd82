import { setTimeout as sleep } from 'node:timers/promises';
import pRetry from 'p-retry';

// The one reconnect policy of the long-lived connections (the tailer's replication session, the
// delivery worker's LISTEN): run the session again whenever it ends, after a capped exponential
// backoff with jitter (p-retry), until stopped. Abortable: stop() does not wait out a backoff.

export interface ReconnectOptions {
  /** Aborting it ends the loop, also in the middle of a wait. */
  signal: AbortSignal;
  /** The first wait; doubled after each session that ended early. */
  minMs?: number;
  /** The cap of the wait. */
  maxMs: number;
  /** A session that lasted this long was healthy: the backoff starts again from minMs. */
  healthyMs?: number;
}

class SessionEnded extends Error {
  constructor(cause: unknown) {
    super('session ended', { cause });
  }
}

/**
 * Runs `session` until `signal` aborts, again after each end — by an error or not (a replication
 * stream or a LISTEN that returns has lost its connection). The session logs its own errors.
 */
export async function keepReconnecting(session: () => Promise<void>, o: ReconnectOptions): Promise<void> {
  const minMs = o.minMs ?? 250;
  const healthyMs = o.healthyMs ?? 60_000;
  while (!o.signal.aborted) {
    let healthy = false;
    try {
      await pRetry(
        async () => {
          const started = Date.now();
          let failure: unknown;
          try {
            await session();
          } catch (err) {
            failure = err;
          }
          if (o.signal.aborted) return;
          if (Date.now() - started >= healthyMs) {
            healthy = true;
            return;
          }
          // Wrapped: p-retry gives up at once on a TypeError, and this loop must never give up.
          throw new SessionEnded(failure);
        },
        { retries: Number.POSITIVE_INFINITY, factor: 2, minTimeout: minMs, maxTimeout: o.maxMs, randomize: true, signal: o.signal },
      );
    } catch {
      // Only an abort gets here (retries are unbounded): the loop condition ends it.
    }
    if (healthy) await sleep(minMs, undefined, { signal: o.signal }).catch(() => undefined);
  }
}
