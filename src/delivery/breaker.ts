import type { Clock } from '../core/clock.js';
import { isDestinationUrl } from './destinations/address.js';
import type { Pool } from '../core/db/pool.js';
import type { Logger } from '../core/log.js';
import { claimProbe, clearFailures, countFailure, readBreaker, readBreakers, resetBreaker, type SharedBreakerRow } from './sql/breakers.js';

// Circuit breakers per subscription endpoint: (project, environment, exact URL). Never per origin:
// a failing path must not pause another path on the same host, and one tenant's failing endpoint
// must not pause another tenant's subscription to the same URL.
//
// The rule: WEBHOOK_BREAKER_FAILURES consecutive failures — whichever tailer saw them, before or
// after a restart — open the breaker for WEBHOOK_BREAKER_COOLDOWN_MS; then exactly one probe; its
// success closes it, its failure opens it again. While it is open no request starts.
//
// Two layers, one rule:
// - walgate.endpoint_breakers is the shared, durable truth (every tailer process, restarts); the
//   probe is claimed there with a lease, so two processes cannot both probe.
// - Each process keeps the state it knows per key and changes it synchronously, the moment an
//   answer arrives, before any round trip: a failure that reaches the threshold closes the gate
//   for every request of this process at once. (Learning it from the database's answer instead
//   let requests that were admitted meanwhile, and retries, through an open breaker.) What the
//   database returns is merged monotonically — a later opening wins, a reset wins only if no
//   failure was seen here after it began — so an out-of-order answer cannot reopen the gate.
// Another process learns an opening at its next refresh (each claim), or when its own requests fail.
//
// Why not opossum: its breaker trips on an error percentage over a rolling window in one process,
// not on consecutive failures across processes; its half-open timer starts when this process saw
// the opening, not at the shared end of the cool-down; its probe is one per process, not one per
// endpoint; and it gates by wrapping the call (fire), whereas the engine needs "may I start now?"
// and "here is the answer" as separate steps (it parks what may not start). Used as a mirror of
// the shared state it was a second state machine to keep in step — the source of the defect above.

export interface BreakerKey {
  projectId: string;
  environment: string;
  /** The subscription's URL, exactly as stored. */
  url: string;
}

export type Admission = { kind: 'send'; probe: boolean } | { kind: 'wait'; until: Date };

export type BreakerState = 'closed' | 'open' | 'half-open';

export interface BreakerSettings {
  failures: number;
  cooldownMs: number;
  /** How long a probe may take before another process (or request) may probe instead. */
  probeLeaseMs: number;
}

interface Known {
  consecutiveFailures: number;
  /** Open until then (ms); null when closed. Once past, the next admission is the probe. */
  openedUntil: number | null;
  /** A probe of this process is in flight until then (ms). */
  probingUntil: number | null;
  /** Bumped by every outcome seen here: a database read that began before it is stale. */
  version: number;
}

/**
 * An endpoint as logs may name it: project, environment and the URL's origin — never its path or
 * query, where receivers often keep a secret.
 */
export function logged(k: BreakerKey): { project: string; environment: string; origin: string } {
  const url = new URL(k.url);
  // A destination's address has no origin (its scheme is not special): its destination id names it.
  const origin = isDestinationUrl(k.url) ? `${url.protocol}//${url.host}` : url.origin;
  return { project: k.projectId, environment: k.environment, origin };
}

// NUL joins the parts: it cannot occur in a URL, nor in project and environment names.
const keyOf = (k: BreakerKey) => `${k.projectId}\u0000${k.environment}\u0000${k.url}`;

export class EndpointBreakers {
  readonly #known = new Map<string, Known>();
  /** When a success last cleared failures other processes may have counted, per endpoint (ms). */
  readonly #cleared = new Map<string, number>();
  #version = 0;

  constructor(
    private readonly pool: Pool,
    private readonly settings: BreakerSettings,
    private readonly clock: Clock,
    private readonly log: Logger,
    /** This process closed the endpoint's open breaker (its probe succeeded): catch-up.ts brings its retries forward. */
    private readonly onClosed: (key: BreakerKey) => void = () => undefined,
  ) {}

  /** Reads the shared state of these endpoints (once per claimed batch). */
  async refresh(keys: BreakerKey[]): Promise<void> {
    const unique = new Map(keys.map((k) => [keyOf(k), k]));
    if (unique.size === 0) return;
    const began = this.#version;
    const list = [...unique.values()];
    const rows = await readBreakers(this.pool, list);
    const found = new Map<string, SharedBreakerRow>();
    for (const r of rows) found.set(keyOf({ projectId: r.project_id, environment: r.environment, url: r.url }), r);
    for (const [id] of unique) {
      const k = this.#known.get(id);
      if (k && k.version > began) continue; // an outcome seen here since the read began is newer
      const r = found.get(id);
      // No row (its subscription went, and the breaker with it) or a closed one counting nothing:
      // the default, not kept — the map holds only endpoints that are failing.
      if (!r || (r.consecutive_failures === 0 && r.opened_until === null)) {
        this.#known.delete(id);
        continue;
      }
      const failures: number = r?.consecutive_failures ?? 0;
      const opened: number | null = r?.opened_until ? (r.opened_until as Date).getTime() : null;
      if (!k) {
        if (r) this.#known.set(id, { consecutiveFailures: failures, openedUntil: opened, probingUntil: null, version: 0 });
        continue;
      }
      k.consecutiveFailures = failures;
      k.openedUntil = opened;
    }
  }

  /**
   * May a request to this endpoint start now? While open: wait. Once the cool-down is over: one
   * probe, claimed in the database (the others wait). Call confirm() right before sending.
   */
  async admit(key: BreakerKey): Promise<Admission> {
    const id = keyOf(key);
    const k = this.#known.get(id);
    const now = this.clock().getTime();
    if (!k || k.openedUntil === null) return { kind: 'send', probe: false };
    if (k.openedUntil > now) return { kind: 'wait', until: new Date(k.openedUntil) };
    if (k.probingUntil !== null && k.probingUntil > now) return this.#retryShortly(now);
    // The cool-down is over: this request is the probe, if the database agrees no one else probes.
    // Taken here before the round trip, so no other request of this process can take it meanwhile.
    k.probingUntil = now + this.settings.probeLeaseMs;
    const at = new Date(now);
    const claimed = await claimProbe(this.pool, key, new Date(k.probingUntil), at);
    if (claimed) return { kind: 'send', probe: true };
    k.probingUntil = null;
    return this.#retryShortly(now);
  }

  /**
   * The last check, synchronous, right before the request starts: an admission granted before an
   * opening failure arrived (while the admission's caller was busy) no longer holds.
   */
  confirm(key: BreakerKey, admission: Admission): Admission {
    if (admission.kind !== 'send' || admission.probe) return admission;
    const k = this.#known.get(keyOf(key));
    if (k?.openedUntil != null) return { kind: 'wait', until: new Date(Math.max(k.openedUntil, this.clock().getTime() + 100)) };
    return admission;
  }

  /** The endpoint answered (2xx). Closes the breaker only when this was its probe, or it was closed. */
  async recordSuccess(key: BreakerKey, probe: boolean): Promise<void> {
    const id = keyOf(key);
    const k = this.#known.get(id);
    if (!k || (k.consecutiveFailures === 0 && k.openedUntil === null && !probe)) {
      // Nothing counted here — but another process (a standby draining the retry queue) may have
      // counted failures, which this success makes no longer consecutive. Cleared at most once a
      // second per endpoint: the hot path stays nearly read-only.
      const now = this.clock().getTime();
      if (now - (this.#cleared.get(id) ?? 0) < CLEAR_EVERY_MS) return;
      if (this.#cleared.size >= MAX_CLEARED) this.#cleared.clear();
      this.#cleared.set(id, now);
      await clearFailures(this.pool, key, new Date(now));
      return;
    }
    // An answer to a request sent before the breaker opened does not close it: only the probe does.
    if (k.openedUntil !== null && !probe) return;
    const wasOpen = k.openedUntil !== null;
    k.consecutiveFailures = 0;
    k.openedUntil = null;
    k.probingUntil = null;
    k.version = ++this.#version;
    const now = this.clock();
    const closed = await resetBreaker(this.pool, key, now);
    if (wasOpen) this.log.info(logged(key), 'circuit breaker closed: the endpoint answers again');
    if (closed) this.onClosed(key);
  }

  /**
   * The attempt failed. Returns the end of the cool-down when the breaker is open after it (the
   * caller schedules the delivery's next attempt no earlier).
   */
  async recordFailure(key: BreakerKey, probe: boolean): Promise<Date | null> {
    const id = keyOf(key);
    const nowMs = this.clock().getTime();
    let k = this.#known.get(id);
    if (!k) this.#known.set(id, (k = { consecutiveFailures: 0, openedUntil: null, probingUntil: null, version: 0 }));
    // First, synchronously: the gate closes for this process now, not after the write below.
    k.consecutiveFailures++;
    const mine = (k.version = ++this.#version);
    const opensNow = probe || (k.openedUntil === null && k.consecutiveFailures >= this.settings.failures);
    if (opensNow) k.openedUntil = nowMs + this.settings.cooldownMs;
    if (probe) k.probingUntil = null;
    const r = await countFailure(this.pool, key, {
      threshold: this.settings.failures,
      openUntil: new Date(nowMs + this.settings.cooldownMs),
      now: new Date(nowMs),
      probe,
    });
    const shared: number | null = r.opened_until ? (r.opened_until as Date).getTime() : null;
    if (k.version === mine && shared === null && !probe && r.consecutive_failures < this.settings.failures) {
      // No outcome seen here since, and the shared count — which every process's failures and
      // successes go through, one at a time — is below the threshold: another process's success
      // cleared it. The count here follows, and an opening made from the stale count is undone.
      k.consecutiveFailures = r.consecutive_failures;
      if (opensNow) k.openedUntil = null;
      return null;
    }
    // Merged monotonically: more failures and a later opening win (another process may have
    // counted some); nothing here closes the gate.
    k.consecutiveFailures = Math.max(k.consecutiveFailures, r.consecutive_failures);
    if (shared !== null && (k.openedUntil === null || shared > k.openedUntil)) k.openedUntil = shared;
    if (opensNow || (probe && shared !== null)) {
      this.log.warn(
        { ...logged(key), until: new Date(k.openedUntil!).toISOString(), failures: k.consecutiveFailures },
        'circuit breaker opened: deliveries to this endpoint wait',
      );
    }
    return k.openedUntil !== null && k.openedUntil > nowMs ? new Date(k.openedUntil) : null;
  }

  /** What this process knows of an endpoint's breaker (the health view shows it). */
  state(key: BreakerKey): BreakerState {
    return this.#stateOf(this.#known.get(keyOf(key)));
  }

  /** Every endpoint this process knows a non-closed breaker for: key → state. */
  states(): Array<BreakerKey & { state: BreakerState }> {
    const out: Array<BreakerKey & { state: BreakerState }> = [];
    for (const [id, k] of this.#known) {
      const [projectId = '', environment = '', url = ''] = id.split('\u0000');
      out.push({ projectId, environment, url, state: this.#stateOf(k) });
    }
    return out;
  }

  #stateOf(k: Known | undefined): BreakerState {
    if (!k || k.openedUntil === null) return 'closed';
    return k.openedUntil > this.clock().getTime() ? 'open' : 'half-open';
  }

  #retryShortly(now: number): Admission {
    return { kind: 'wait', until: new Date(now + Math.min(1000, Math.max(50, this.settings.cooldownMs))) };
  }
}

/** A success clears other processes' failure count at most this often per endpoint. */
const CLEAR_EVERY_MS = 1000;
/** Endpoints remembered for that at most (then forgotten at once: a clear too many costs one statement). */
const MAX_CLEARED = 10_000;

/** What the management API shows of a subscription's breaker. */
export interface BreakerView {
  state: 'closed' | 'open' | 'half-open';
  /** While open: when the cool-down ends and one probe may go. */
  openUntil: string | null;
  consecutiveFailures: number;
}

export interface BreakerKey {
  projectId: string;
  environment: string;
  url: string;
}

/**
 * A subscription's breaker as the shared state holds it, for the health view (read-only; the
 * delivery worker alone changes it). Half-open: the cool-down is over, a probe is due or running.
 */
export async function breakerState(db: Pick<Pool, 'query'>, key: BreakerKey, now: Date): Promise<BreakerView> {
  return breakerView(await readBreaker(db, key), now);
}

/** A breaker's shared row as the API shows it (no row: closed, no failure). */
export function breakerView(r: { consecutive_failures: number | null; opened_until: Date | null } | undefined, now: Date): BreakerView {
  if (!r?.opened_until) return { state: 'closed', openUntil: null, consecutiveFailures: r?.consecutive_failures ?? 0 };
  const until = r.opened_until;
  return {
    state: until > now ? 'open' : 'half-open',
    openUntil: until > now ? until.toISOString() : null,
    consecutiveFailures: r.consecutive_failures ?? 0,
  };
}
