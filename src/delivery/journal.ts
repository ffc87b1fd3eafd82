import { PgCode, pgCode, type Queryable } from '../core/db/pool.js';
import type { KeptRequest } from './attempt.js';
import type { CapturedDelivery, CapturedEvent } from '../tailer/sink.js';
import { notifyDue, writeDelivered, writeParked } from './sql/journal.js';

// What the stream writes, in batches (group commit: while one write runs, the next gathers), each
// through the connection that holds the tailer's leadership (tailer/capture: the fence). Each entry's
// `done` runs once its row — or, for a `history: "failures"` subscription's delivered change, its
// count — is committed; only then may the slot move past its change.

/**
 * A delivery that succeeded on its first attempt: its one row, with the attempt folded in — or,
 * when its subscription's history is 'failures', only its count in the per-minute rollup.
 */
export interface DeliveredEntry {
  delivery: CapturedDelivery;
  /** The subscription's history mode when the answer came (targets.ts). */
  history: 'full' | 'failures';
  createdAt: Date;
  httpStatus: number | null;
  startedAt: Date;
  durationMs: number;
  /** The first KiB of the receiver's answer. */
  responseBody: string | null;
  /** The request as sent (WEBHOOK_KEEP_PAYLOADS), in the history row itself. */
  kept: KeptRequest | null;
  deliveredAt: Date;
  /** The batch it went in (its webhook-id, batch.ts); null when it went alone. */
  batchId?: string | null;
  done: () => void;
}

/** A delivery parked in the retry queue: its event (the payload), its row, and its attempt if one was made. */
export interface ParkedEntry {
  event: CapturedEvent;
  delivery: CapturedDelivery;
  createdAt: Date;
  status: 'pending' | 'retrying' | 'dead';
  attempts: number;
  httpStatus: number | null;
  lastError: string | null;
  nextAttemptAt: Date;
  attempt: {
    /** A request sent (default), or a wait on the endpoint's breaker (no attempt spent). */
    kind?: 'request' | 'wait';
    startedAt: Date;
    durationMs: number;
    httpStatus: number | null;
    error: string | null;
    responseBody: string | null;
    kept: KeptRequest | null;
  } | null;
  /** The batch it was sent in: the retry queue sends it again in that batch (batch-claims.ts); null when sent alone or not sent. */
  batchId?: string | null;
  done: () => void;
}

/** Rows per statement at most. */
const MAX_BATCH = 5000;
/**
 * Kept bodies per statement at most, in UTF-16 code units (about bytes: bodies are JSON, mostly
 * ASCII), but always one row: a statement's parameters are copied a few times on their way out
 * (encoding, the protocol message), so 32 answers of 1 MB rows at once go as several statements.
 */
const MAX_BATCH_BODY = 4 * 1024 * 1024;

// A delivered row may wait a moment for company. Group commit alone writes whatever gathered while
// the last write ran, which under load was a couple of dozen rows; each statement has a fixed cost
// (its transaction, its round trip, the per-statement rollup of sql/015, the walsender's decoding
// of one more transaction), and at 25 rows a statement that cost doubled the CPU per row of
// Postgres and of the tailer against 500 (history-write micro-benchmark). Nothing waits for these
// writes but the slot's acknowledgement and the memory of settled deliveries: the receiver has its
// request already, and the next change of a row goes when the answer comes (stream.ts).
/** A delivered row is written at most this long after it was handed over, unless a write is still running. */
export const GATHER_MS = 20;
/** ...or at once when this many have gathered. */
const GATHER_ROWS = 500;

export class Journal {
  #delivered: DeliveredEntry[] = [];
  #parked: ParkedEntry[] = [];
  #writing: Promise<void> | null = null;
  #closed = false;
  /** When the oldest delivered row waiting to be written was handed over (performance.now()). */
  #oldestAt = 0;
  #gathering: NodeJS.Timeout | null = null;
  /** The kept bodies of the delivered rows waiting to be written (MAX_BATCH_BODY's unit). */
  #waitingBody = 0;
  #idleWaiters: Array<() => void> = [];
  stats = { batches: 0, delivered: 0, parked: 0 };

  constructor(
    private readonly db: Queryable,
    private readonly onError: (err: Error) => void,
  ) {}

  get backlog(): number {
    return this.#delivered.length + this.#parked.length;
  }

  delivered(entry: DeliveredEntry): void {
    if (this.#delivered.length === 0) this.#oldestAt = performance.now();
    this.#delivered.push(entry);
    this.#waitingBody += bodyOf(entry);
    this.#start();
  }

  parked(entry: ParkedEntry): void {
    this.#parked.push(entry);
    this.#start();
  }

  /** Resolves once everything handed over is written (or the journal closed or failed). */
  idle(): Promise<void> {
    if (this.#closed || (!this.#writing && this.backlog === 0)) return Promise.resolve();
    return new Promise((resolve) => this.#idleWaiters.push(resolve));
  }

  #wakeIdle(): void {
    if (!this.#closed && (this.#writing || this.backlog > 0)) return;
    for (const wake of this.#idleWaiters.splice(0)) wake();
  }

  /** No more writes (leadership ended); what is being written finishes or fails on its own. */
  close(): void {
    this.#closed = true;
    if (this.#gathering) clearTimeout(this.#gathering);
    this.#gathering = null;
    this.#delivered = [];
    this.#waitingBody = 0;
    this.#parked = [];
    this.#wakeIdle();
  }

  #start(): void {
    if (this.#writing || this.#closed) return;
    if (this.#delivered.length === 0 && this.#parked.length === 0) return;
    // Parked rows go at once (the retry queue's workers wait for them); delivered ones gather.
    const wait = GATHER_MS - (performance.now() - this.#oldestAt);
    const full = this.#delivered.length >= GATHER_ROWS || this.#waitingBody >= MAX_BATCH_BODY;
    if (this.#parked.length === 0 && !full && wait > 0) {
      this.#gathering ??= setTimeout(() => {
        this.#gathering = null;
        this.#start();
      }, wait);
      return;
    }
    if (this.#gathering) clearTimeout(this.#gathering);
    this.#gathering = null;
    const delivered = this.#delivered.splice(0, batchSize(this.#delivered));
    for (const e of delivered) this.#waitingBody -= bodyOf(e);
    this.#oldestAt = performance.now();
    const parked = this.#parked.splice(0, MAX_BATCH);
    this.#writing = (async () => {
      if (parked.length > 0) {
        await retryOnVanishedSubscription(() => writeParked(this.db, parked));
        // The retry queue's workers look now, or when the first of these is due (a retry due in
        // 10 ms need not wait for their next poll).
        const due = Math.min(...parked.map((e) => e.nextAttemptAt.getTime()));
        await notifyDue(this.db, due);
      }
      if (delivered.length > 0) await retryOnVanishedSubscription(() => writeDelivered(this.db, delivered));
    })().then(
      () => {
        this.#writing = null;
        this.stats.batches++;
        this.stats.delivered += delivered.length;
        this.stats.parked += parked.length;
        if (!this.#closed) {
          for (const e of parked) e.done();
          for (const e of delivered) e.done();
        }
        this.#start();
        this.#wakeIdle();
      },
      (err: unknown) => {
        this.#writing = null;
        if (!this.#closed) this.onError(err as Error);
        for (const wake of this.#idleWaiters.splice(0)) wake();
      },
    );
  }
}

/** How many of the first rows go in one statement: MAX_BATCH, and their bodies within MAX_BATCH_BODY. */
function batchSize(rows: DeliveredEntry[]): number {
  let body = 0;
  for (let n = 0; n < Math.min(rows.length, MAX_BATCH); n++) {
    body += bodyOf(rows[n]!);
    if (body > MAX_BATCH_BODY) return Math.max(n, 1);
  }
  return Math.min(rows.length, MAX_BATCH);
}

// (A 'failures' entry writes no body: it does not weigh on the statement.)
const bodyOf = (e: DeliveredEntry): number => (e.history === 'failures' ? 0 : (e.kept?.payload.length ?? 0));

// A subscription deleted between the join with walgate.webhooks and the foreign-key check: the
// join leaves it out the next time (a deleted subscription gets nothing).
async function retryOnVanishedSubscription(write: () => Promise<unknown>): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await write();
      return;
    } catch (err) {
      if (pgCode(err) === PgCode.foreignKeyViolation && attempt < 5) continue;
      throw err;
    }
  }
}
