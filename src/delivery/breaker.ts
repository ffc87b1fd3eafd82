import CircuitBreaker from 'opossum';
import type { Clock } from '../core/clock.js';
import type { Pool } from '../core/db/pool.js';
import type { Logger } from '../core/log.js';

// Circuit breakers per subscriber origin (scheme + host + port).
//
// The truth is shared, in walgate.endpoint_breakers, because the rule is about an endpoint, not a
// process: WEBHOOK_BREAKER_FAILURES consecutive failures — whichever tailer saw them, before or
// after a restart — open it for WEBHOOK_BREAKER_COOLDOWN_MS; then exactly one probe (claimed with
// a lease, so two processes cannot both probe); its success closes it, its failure re-opens it.
// While open, deliveries wait and spend no attempts.
//
// Each process mirrors that state in an opossum breaker per origin, through which every request is
// fired: opossum's own rolling-window tripping is switched off (it counts error percentages in one
// process, not consecutive failures across processes); it serves as the local gate that refuses
// at once while the shared state says open, and as the place where open/close transitions are seen.

export interface SharedState {
  consecutiveFailures: number;
  openedUntil: Date | null;
  probeUntil: Date | null;
}

export type Admission = { kind: 'send'; probe: boolean } | { kind: 'wait'; until: Date };

export interface BreakerSettings {
  failures: number;
  cooldownMs: number;
  /** How long a probe may take before another process may probe instead. */
  probeLeaseMs: number;
}

export class EndpointBreakers {
  readonly #local = new Map<string, CircuitBreaker<[() => Promise<unknown>], unknown>>();
  readonly #known = new Map<string, SharedState>();
  // When each origin's state was last learnt here (a counter): a refresh whose read began before
  // an outcome recorded here must not bring the older state back (it would let a request through
  // a breaker that just opened).
  readonly #learnt = new Map<string, number>();
  #clock = 0;

  constructor(
    private readonly pool: Pool,
    private readonly settings: BreakerSettings,
    private readonly clock: Clock,
    private readonly log: Logger,
  ) {}

  /** Reads the shared state of these origins (once per claimed batch). */
  async refresh(origins: string[]): Promise<void> {
    if (origins.length === 0) return;
    const began = ++this.#clock;
    const { rows } = await this.pool.query(
      'SELECT origin, consecutive_failures, opened_until, probe_until FROM walgate.endpoint_breakers WHERE origin = ANY($1)',
      [origins],
    );
    const found = new Set<string>();
    for (const r of rows) {
      found.add(r.origin);
      if (this.#newer(r.origin, began)) continue;
      this.#known.set(r.origin, { consecutiveFailures: r.consecutive_failures, openedUntil: r.opened_until, probeUntil: r.probe_until });
    }
    for (const o of origins) if (!found.has(o) && !this.#newer(o, began)) this.#known.delete(o);
  }

  /** May a request go to this origin now? */
  async admit(origin: string): Promise<Admission> {
    const state = this.#known.get(origin);
    const now = this.clock();
    if (!state?.openedUntil) {
      this.#mirror(origin, false);
      return { kind: 'send', probe: false };
    }
    if (state.openedUntil > now) {
      this.#mirror(origin, true);
      return { kind: 'wait', until: state.openedUntil };
    }
    // The cool-down is over: one probe, whoever claims it first.
    const { rowCount } = await this.pool.query(
      `UPDATE walgate.endpoint_breakers SET probe_until = $2, updated_at = $3
        WHERE origin = $1 AND opened_until <= $3 AND (probe_until IS NULL OR probe_until <= $3)`,
      [origin, new Date(now.getTime() + this.settings.probeLeaseMs), now],
    );
    if (rowCount) {
      this.#learn(origin, { ...state, probeUntil: new Date(now.getTime() + this.settings.probeLeaseMs) });
      this.#mirror(origin, false); // the probe must pass the local gate
      return { kind: 'send', probe: true };
    }
    // Someone else probes: look again shortly.
    return { kind: 'wait', until: new Date(now.getTime() + Math.min(1000, this.settings.cooldownMs || 1000)) };
  }

  /** Fires a request through the origin's local breaker (refused at once while it is open). */
  fire<T>(origin: string, request: () => Promise<T>): Promise<T> {
    return this.#breaker(origin).fire(request) as Promise<T>;
  }

  /** Records an attempt's outcome; returns the end of the cool-down when this failure opened the breaker. */
  async record(origin: string, ok: boolean, probe: boolean): Promise<Date | null> {
    const now = this.clock();
    const known = this.#known.get(origin);
    if (ok) {
      // Successes write only when there is something to reset: the hot path stays read-only.
      if (known && (known.consecutiveFailures > 0 || known.openedUntil || known.probeUntil || probe)) {
        await this.pool.query(
          `UPDATE walgate.endpoint_breakers SET consecutive_failures = 0, opened_until = NULL, probe_until = NULL, updated_at = $2
            WHERE origin = $1`,
          [origin, now],
        );
        if (known.openedUntil) this.log.info({ origin }, 'circuit breaker closed: the endpoint answers again');
      }
      this.#learn(origin, undefined);
      this.#mirror(origin, false);
      return null;
    }
    const opensAt = new Date(now.getTime() + this.settings.cooldownMs);
    const { rows } = await this.pool.query(
      `INSERT INTO walgate.endpoint_breakers AS b (origin, consecutive_failures, opened_until, updated_at)
       VALUES ($1, 1, CASE WHEN $4 OR 1 >= $2 THEN $3::timestamptz END, $5)
       ON CONFLICT (origin) DO UPDATE SET
         consecutive_failures = b.consecutive_failures + 1,
         opened_until = CASE WHEN $4 OR b.consecutive_failures + 1 >= $2 THEN $3::timestamptz ELSE b.opened_until END,
         probe_until = CASE WHEN $4 THEN NULL ELSE b.probe_until END,
         updated_at = $5
       RETURNING consecutive_failures, opened_until, probe_until`,
      [origin, this.settings.failures, opensAt, probe, now],
    );
    const r = rows[0];
    this.#learn(origin, { consecutiveFailures: r.consecutive_failures, openedUntil: r.opened_until, probeUntil: r.probe_until });
    const opened = r.opened_until && r.opened_until > now ? (r.opened_until as Date) : null;
    if (opened) {
      if (probe || r.consecutive_failures === this.settings.failures) {
        this.log.warn({ origin, until: opened.toISOString(), failures: r.consecutive_failures }, 'circuit breaker opened: deliveries to this endpoint wait');
      }
      this.#mirror(origin, true);
    }
    return opened;
  }

  #learn(origin: string, state: SharedState | undefined): void {
    if (state) this.#known.set(origin, state);
    else this.#known.delete(origin);
    this.#learnt.set(origin, ++this.#clock);
  }

  #newer(origin: string, than: number): boolean {
    return (this.#learnt.get(origin) ?? 0) > than;
  }

  #breaker(origin: string): CircuitBreaker<[() => Promise<unknown>], unknown> {
    let b = this.#local.get(origin);
    if (!b) {
      b = new CircuitBreaker((request: () => Promise<unknown>) => request(), {
        timeout: false, // the sender times each attempt out itself
        volumeThreshold: Number.MAX_SAFE_INTEGER, // never trips on its own: the shared state decides
        resetTimeout: Math.max(1, this.settings.cooldownMs),
        name: origin,
      });
      this.#local.set(origin, b);
    }
    return b;
  }

  #mirror(origin: string, open: boolean): void {
    const b = this.#breaker(origin);
    if (open && !b.opened) b.open();
    else if (!open && !b.closed) b.close();
  }

  /** Local states for metrics: origin → 'open' | 'half-open' | 'closed'. */
  states(): Map<string, string> {
    const out = new Map<string, string>();
    for (const [origin, b] of this.#local) out.set(origin, b.opened ? 'open' : b.halfOpen ? 'half-open' : 'closed');
    return out;
  }

  shutdown(): void {
    for (const b of this.#local.values()) b.shutdown();
    this.#local.clear();
  }
}
