import type { Pool } from '../core/db/pool.js';
import type { Logger } from '../core/log.js';
import type { CapturedDelivery } from '../tailer/sink.js';
import { unfinishedOrderKeyCounts, unfinishedOrderKeys, unfinishedOrderKeysOf } from './sql/order-keys.js';

/**
 * Row ordering in the stream (a subscription's `ordering: "row"`; docs/webhooks.md, Ordering). The
 * deliveries that share an order key (one row of one subscription, tailer/order-keys.ts) form a
 * chain, in the order the WAL hands them over — commit order. Only a chain's head may act: be
 * sent, or be parked in the retry queue. A delivery with two keys (a change of the primary key)
 * waits until it heads both chains.
 *
 *   head answered 2xx                → the next may go (in the stream)
 *   head parked (failure, wait, …)   → the key is "blocked": every later delivery of it is parked
 *                                      too, after it, until the retry queue holds none of the key's
 *                                      deliveries unfinished (then the stream sends again)
 *
 * Why the first arrival of each change is in commit order. A change n+1 of a key is sent by the
 * stream only after n was answered 2xx, or after the retry queue had no unfinished delivery of the
 * key (n delivered or dead there). It is parked only after n was parked — the journal commits parks
 * in the order they are handed to it, so n+1's row never commits before n's — and the retry queue
 * claims a delivery only when no earlier unfinished delivery shares a key (store.ts claimDue). So
 * whoever sends n+1 — the stream or any worker of any process — does so after n arrived, or after
 * n went dead. A crash or a new leader changes nothing: the slot is acknowledged only past settled
 * changes, so the next leader reads the unsettled ones again in commit order; it first loads which
 * keys the retry queue holds (open), and a change it parks again is the same row (ids are WAL
 * positions, ON CONFLICT DO NOTHING). What it sends again is a duplicate of a change that already
 * arrived, in order, the first time.
 */
export interface OrderedJob {
  delivery: CapturedDelivery;
}

interface Chain {
  webhookId: string;
  key: string;
  /** Its deliveries that have not acted yet, in commit order; the head may act. */
  jobs: OrderedJob[];
  /** The retry queue holds (or is being handed) an unfinished delivery of this key. */
  blocked: boolean;
  /** Parks of this key handed to the journal and not committed yet. */
  unsettled: number;
  /** The park sequence number of its last park. */
  lastPark: number;
}

/** Per subscription with too many keys in the retry queue to keep in memory: every delivery of it is parked. */
interface DurableOnly {
  unsettled: number;
  lastPark: number;
}

export interface RowOrderOptions {
  /** Keys kept in memory per subscription at most; more make it durable-only until its queue shrinks. */
  maxKeysPerSubscription: number;
  /** How often the blocked keys are checked against the retry queue. */
  refreshMs: number;
}

export type Act<J extends OrderedJob> = (job: J, park: boolean) => void;

const chainId = (webhookId: string, key: string) => `${webhookId}\0${key}`;

export class RowOrder<J extends OrderedJob> {
  readonly #pool: Pool;
  readonly #log: Logger;
  readonly #o: RowOrderOptions;
  readonly #act: Act<J>;
  readonly #chains = new Map<string, Chain>();
  readonly #durableOnly = new Map<string, DurableOnly>();
  /** Jobs waiting in chains (not yet acted), per subscription. */
  readonly #waiting = new Map<string, number>();
  /** Heads to look at, in the order they became heads (handled in a loop: a park cascades). */
  readonly #due: J[] = [];
  /** Jobs that have acted (a job can be due twice: once per chain it heads). */
  readonly #acted = new WeakSet<J>();
  #draining = false;
  #loaded = false;
  #closed = false;
  #parkSeq = 0;
  #refreshing: Promise<void> | null = null;
  #again = false;
  #ticks = 0;
  readonly #timer: NodeJS.Timeout;

  constructor(pool: Pool, log: Logger, options: RowOrderOptions, act: Act<J>) {
    this.#pool = pool;
    this.#log = log;
    this.#o = options;
    this.#act = act;
    this.#timer = setInterval(() => this.refreshSoon(), options.refreshMs);
    this.#timer.unref();
  }

  /**
   * Loads which keys the retry queue holds unfinished (left by an earlier leader, or by this
   * process before a reconnect). Until it is done, no ordered delivery acts.
   */
  async open(): Promise<void> {
    const counts = await unfinishedOrderKeyCounts(this.#pool);
    const small: string[] = [];
    for (const [webhookId, n] of counts) {
      if (n > this.#o.maxKeysPerSubscription) this.#durableOnly.set(webhookId, { unsettled: 0, lastPark: 0 });
      else small.push(webhookId);
    }
    if (small.length > 0) {
      for (const { webhookId, key } of await unfinishedOrderKeysOf(this.#pool, small)) this.#chain(webhookId, key).blocked = true;
    }
    if (this.#closed) return;
    this.#loaded = true;
    for (const chain of this.#chains.values()) if (chain.jobs[0]) this.#due.push(chain.jobs[0] as J);
    this.#drain();
  }

  /** Takes a delivery with order keys: it acts when it heads each of its chains. */
  add(job: J): void {
    const keys = job.delivery.orderKeys!;
    this.#waiting.set(job.delivery.webhookId, (this.#waiting.get(job.delivery.webhookId) ?? 0) + 1);
    for (const key of keys) this.#chain(job.delivery.webhookId, key).jobs.push(job);
    this.#due.push(job);
    this.#drain();
  }

  /** Ordered deliveries of a subscription waiting for their turn (held in memory). */
  waiting(webhookId: string): number {
    return this.#waiting.get(webhookId) ?? 0;
  }

  /**
   * The job has acted and is done with its chains: answered 2xx (or dropped, its subscription
   * gone) — `parked` false — or handed to the journal to be parked — `parked` true: its keys are
   * blocked from now on. Each chain's next job may then act.
   */
  released(job: J, parked: boolean): void {
    const { webhookId, orderKeys } = job.delivery;
    let durableOnly: DurableOnly | undefined;
    if (parked) {
      this.#parkSeq++;
      durableOnly = this.#durableOnly.get(webhookId);
      if (durableOnly) {
        durableOnly.unsettled++;
        durableOnly.lastPark = this.#parkSeq;
      }
    }
    for (const key of orderKeys!) {
      const id = chainId(webhookId, key);
      const chain = this.#chains.get(id);
      if (!chain) continue;
      const at = chain.jobs.indexOf(job);
      if (at >= 0) chain.jobs.splice(at, 1);
      // A durable-only subscription keeps no per-key state for its parks (that is its point).
      if (parked && !durableOnly) {
        chain.blocked = true;
        chain.unsettled++;
        chain.lastPark = this.#parkSeq;
      }
      if (chain.jobs[0]) this.#due.push(chain.jobs[0] as J);
      else if (!chain.blocked) this.#chains.delete(id);
    }
    this.#drain();
  }

  /** A park of this job is committed (the journal's `done`). */
  parkCommitted(job: J): void {
    const { webhookId, orderKeys } = job.delivery;
    const durableOnly = this.#durableOnly.get(webhookId);
    if (durableOnly && durableOnly.unsettled > 0) durableOnly.unsettled--;
    for (const key of orderKeys!) {
      const chain = this.#chains.get(chainId(webhookId, key));
      if (chain && chain.unsettled > 0) chain.unsettled--;
    }
  }

  /** Checks the blocked keys against the retry queue now (or right after the check under way). */
  refreshSoon(): void {
    if (this.#closed || !this.#loaded) return;
    if (this.#refreshing) {
      this.#again = true;
      return;
    }
    this.#refreshing = this.#refresh()
      .catch((err: unknown) => this.#log.warn({ err }, 'could not check blocked row keys against the retry queue; retrying'))
      .finally(() => {
        this.#refreshing = null;
        if (this.#again) {
          this.#again = false;
          this.refreshSoon();
        }
      });
  }

  close(): void {
    this.#closed = true;
    clearInterval(this.#timer);
    this.#chains.clear();
    this.#durableOnly.clear();
    this.#waiting.clear();
    this.#due.length = 0;
  }

  #chain(webhookId: string, key: string): Chain {
    const id = chainId(webhookId, key);
    let chain = this.#chains.get(id);
    if (!chain) {
      chain = { webhookId, key, jobs: [], blocked: false, unsettled: 0, lastPark: 0 };
      this.#chains.set(id, chain);
    }
    return chain;
  }

  /** Lets each due job that heads all of its chains act: parked when a key of it is blocked, else sent. */
  #drain(): void {
    if (this.#draining || !this.#loaded || this.#closed) return;
    this.#draining = true;
    try {
      while (this.#due.length > 0 && !this.#closed) {
        const job = this.#due.shift()!;
        if (this.#acted.has(job)) continue;
        const { webhookId, orderKeys } = job.delivery;
        const chains = orderKeys!.map((key) => this.#chains.get(chainId(webhookId, key)));
        // Not (or no longer) the head of each chain: it becomes due again when it is.
        if (!chains.every((c) => c?.jobs[0] === job)) continue;
        const waiting = (this.#waiting.get(webhookId) ?? 1) - 1;
        if (waiting > 0) this.#waiting.set(webhookId, waiting);
        else this.#waiting.delete(webhookId);
        const park = this.#durableOnly.has(webhookId) || chains.some((c) => c!.blocked);
        this.#acted.add(job);
        // Acting may release it at once (a park calls released): it leaves its chains there.
        this.#act(job, park);
      }
    } finally {
      this.#draining = false;
    }
  }

  async #refresh(): Promise<void> {
    const seq = this.#parkSeq;
    // Only keys with no park of this stream still being written: what the query sees of them is then complete.
    const candidates = [...this.#chains.values()].filter((c) => c.blocked && c.unsettled === 0).slice(0, MAX_REFRESH);
    if (candidates.length > 0) {
      const found = await unfinishedOrderKeys(
        this.#pool,
        candidates.map((c) => ({ webhookId: c.webhookId, key: c.key })),
      );
      const still = new Set(found.map((k) => chainId(k.webhookId, k.key)));
      if (this.#closed) return;
      for (const c of candidates) {
        // Parked again since the query started: its answer is out of date.
        if (c.lastPark > seq || c.unsettled > 0 || still.has(chainId(c.webhookId, c.key))) continue;
        c.blocked = false;
        const id = chainId(c.webhookId, c.key);
        if (this.#chains.get(id) !== c) continue;
        if (c.jobs[0]) this.#due.push(c.jobs[0] as J);
        else this.#chains.delete(id);
      }
      this.#drain();
    }
    // Durable-only subscriptions are looked at less often (a count over their unfinished deliveries).
    if (this.#durableOnly.size > 0 && this.#ticks++ % DURABLE_ONLY_EVERY === 0) await this.#refreshDurableOnly();
  }

  async #refreshDurableOnly(): Promise<void> {
    const seq = this.#parkSeq;
    const ids = [...this.#durableOnly].filter(([, d]) => d.unsettled === 0).map(([id]) => id);
    if (ids.length === 0) return;
    const counts = await unfinishedOrderKeyCounts(this.#pool, ids);
    const fits = ids.filter((id) => (counts.get(id) ?? 0) <= this.#o.maxKeysPerSubscription);
    if (fits.length === 0 || this.#closed) return;
    const keys = await unfinishedOrderKeysOf(this.#pool, fits);
    if (this.#closed) return;
    for (const id of fits) {
      const d = this.#durableOnly.get(id);
      if (!d || d.lastPark > seq || d.unsettled > 0) continue;
      this.#durableOnly.delete(id);
      this.#log.info(
        { webhookId: id },
        'row ordering: the retry queue holds few enough rows of this subscription again; its keys are tracked',
      );
      for (const k of keys) if (k.webhookId === id) this.#chain(id, k.key).blocked = true;
      for (const chain of this.#chains.values()) if (chain.webhookId === id && chain.jobs[0]) this.#due.push(chain.jobs[0] as J);
    }
    this.#drain();
  }
}

/** Blocked keys checked per query at most (the rest at the next refresh). */
const MAX_REFRESH = 10_000;

/** Durable-only subscriptions are checked every this many refreshes. */
const DURABLE_ONLY_EVERY = 20;
