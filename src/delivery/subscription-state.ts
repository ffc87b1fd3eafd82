import type { Clock } from '../core/clock.js';
import type { Logger } from '../core/log.js';
import type { BreakerState, BreakerView } from './breaker.js';

// How a subscription's deliveries go, in one word, where a person looks: the management API and
// the console list show it next to `active`, and the tailer logs each change of it. A subscription
// whose receiver refuses every request used to read "Active" with only a progress line saying
// `"failed":1`.

export const SUBSCRIPTION_STATES = ['healthy', 'failing', 'breaker_open', 'disabled'] as const;
export type SubscriptionState = (typeof SUBSCRIPTION_STATES)[number];

/**
 * From what the API reads: `disabled` when it is not active (paused, or disabled by a 410);
 * `breaker_open` while its endpoint's breaker holds requests (open or waiting for its probe);
 * `failing` when the endpoint's latest attempts failed (its breaker counts them, and a success
 * resets the count); `healthy` otherwise.
 */
export function subscriptionState(active: boolean, breaker: Pick<BreakerView, 'state' | 'consecutiveFailures'>): SubscriptionState {
  if (!active) return 'disabled';
  if (breaker.state !== 'closed') return 'breaker_open';
  return breaker.consecutiveFailures > 0 ? 'failing' : 'healthy';
}

/** After one attempt, as the process that made it saw it. */
export function stateAfterAttempt(a: { ok: boolean; disabled: boolean; breaker: BreakerState }): SubscriptionState {
  if (a.disabled) return 'disabled';
  if (a.ok) return 'healthy';
  return a.breaker !== 'closed' ? 'breaker_open' : 'failing';
}

/** Changes of one subscription logged at most once per this interval; the ones between are counted. */
export const STATE_LOG_INTERVAL_MS = 60_000;

interface Seen {
  /** The state the latest line said. */
  logged: SubscriptionState;
  /** The state now, and why. */
  state: SubscriptionState;
  reason: string;
  loggedAt: number;
  /** Changes not logged since `loggedAt` (rate limit). */
  unlogged: number;
}

/**
 * Logs at `warn` the first failure of each subscription and each change of its state, with the
 * reason (the attempt's error, "breaker open", the 410), at most one line per subscription per
 * interval: a flapping endpoint cannot flood the log, and the next line says how many changes it
 * folded in. Only subscriptions that are not healthy (or whose return to health is not logged
 * yet) are kept in memory.
 */
export class SubscriptionStateLog {
  readonly #seen = new Map<string, Seen>();

  constructor(
    private readonly log: Logger,
    private readonly clock: Clock,
    private readonly intervalMs = STATE_LOG_INTERVAL_MS,
  ) {}

  observe(webhookId: string, state: SubscriptionState, reason: string): void {
    let seen = this.#seen.get(webhookId);
    if (!seen) {
      if (state === 'healthy') return; // the hot path: nothing kept, nothing logged
      seen = { logged: 'healthy', state, reason, loggedAt: -Infinity, unlogged: 0 };
      this.#seen.set(webhookId, seen);
    }
    if (state !== seen.state) seen.unlogged++;
    seen.state = state;
    seen.reason = reason;
    const now = this.clock().getTime();
    if (seen.state === seen.logged || now - seen.loggedAt < this.intervalMs) return;
    const folded = seen.unlogged - 1;
    this.log.warn(
      {
        component: 'delivery',
        webhook: webhookId,
        state,
        previous: seen.logged,
        reason,
        ...(folded > 0 ? { changesNotLogged: folded } : {}),
      },
      MESSAGES[state],
    );
    seen.logged = state;
    seen.loggedAt = now;
    seen.unlogged = 0;
    if (state === 'healthy') this.#seen.delete(webhookId);
  }
}

const MESSAGES: Record<SubscriptionState, string> = {
  healthy: 'subscription delivers again',
  failing: 'subscription failing: its deliveries fail',
  breaker_open: "subscription's breaker is open: its deliveries wait",
  disabled: 'subscription disabled: no deliveries',
};
