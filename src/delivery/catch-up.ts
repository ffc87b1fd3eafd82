import type { Clock } from '../core/clock.js';
import type { Pool } from '../core/db/pool.js';
import type { Logger } from '../core/log.js';
import { logged, type BreakerKey } from './breaker.js';
import { bringForwardPage, endpointSubscriptions } from './sql/catch-up.js';
import { notifyDue } from './sql/journal.js';

/**
 * The catch-up after an outage: when an endpoint's probe succeeds and closes its breaker, the
 * endpoint's deliveries that wait in the retry queue for a retry slot come due now, and the workers
 * are told (NOTIFY). Without it they kept their slots — up to a whole retry interval after the
 * receiver returned (5 min with the default schedule), and with row ordering every later change of
 * a row waited behind its head's slot.
 *
 * Run by the process whose probe closed the breaker (the shared row says it was open), in pages of
 * PAGE, earliest slots first: each page is one short statement, the workers start on the first
 * while the next is written, and a backlog of hundreds of thousands of retries is never one
 * statement. Leases are never brought forward (sql/044). A crash midway leaves the rest at their
 * slots, as before this existed: they are late, never lost nor sent twice.
 *
 * Once more FOLLOW_UP_MS later: attempts that the breaker held back just before it closed (another
 * process's, or this one's while its probe was out) write their retry slots after the first pass.
 * Both passes stop once the endpoint fails again: then the slots are backoff, and stay.
 */
export class BreakerCatchUp {
  readonly #timers = new Set<NodeJS.Timeout>();
  #stopped = false;

  constructor(
    private readonly pool: Pool,
    private readonly clock: Clock,
    private readonly log: Logger,
  ) {}

  /** The endpoint's breaker has just been closed by this process. */
  closed(key: BreakerKey): void {
    if (this.#stopped) return;
    void this.#pass(key);
    const timer = setTimeout(() => {
      this.#timers.delete(timer);
      void this.#pass(key);
    }, FOLLOW_UP_MS);
    timer.unref();
    this.#timers.add(timer);
  }

  /** No more passes; a page under way finishes, the next is not started. */
  stop(): void {
    this.#stopped = true;
    for (const t of this.#timers) clearTimeout(t);
    this.#timers.clear();
  }

  async #pass(key: BreakerKey): Promise<void> {
    let moved = 0;
    try {
      for (const webhookId of await endpointSubscriptions(this.pool, key)) {
        let from = new Date(0);
        for (let page = 0; page < MAX_PAGES && !this.#stopped; page++) {
          const now = this.clock();
          const r = await bringForwardPage(this.pool, key, webhookId, { now, from, limit: PAGE });
          if (r.moved > 0) {
            moved += r.moved;
            await notifyDue(this.pool, now.getTime());
          }
          if (r.found < PAGE || !r.last) break;
          from = r.last;
        }
      }
    } catch (err) {
      // What was not brought forward goes at its retry slot.
      this.log.warn({ err, ...logged(key) }, 'could not bring retries forward after the breaker closed; they go at their retry slots');
      return;
    }
    if (moved > 0) this.log.info({ ...logged(key), deliveries: moved }, 'breaker closed: waiting retries brought forward');
  }
}

/** Deliveries brought forward per statement. */
const PAGE = 1000;
/** Pages per subscription and pass at most (a million retries): a bound, should the range not shrink. */
const MAX_PAGES = 1000;
/** The second pass, after results of attempts held back before the closing are written. */
const FOLLOW_UP_MS = 2000;
