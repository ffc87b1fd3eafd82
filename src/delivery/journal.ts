import { PgCode, pgCode, type Queryable } from '../core/db/pool.js';
import type { KeptRequest } from './attempt.js';
import type { CapturedDelivery, CapturedEvent } from '../tailer/sink.js';
import { notifyDue, writeDelivered, writeParked } from './sql/journal.js';

// What the stream writes, in batches (group commit: while one write runs, the next gathers), each
// through the connection that holds the tailer's leadership (tailer/capture: the fence). Each entry's
// `done` runs once its row is committed; only then may the slot move past its change.

/** A delivery that succeeded on its first attempt: its one row, with the attempt folded in. */
export interface DeliveredEntry {
  delivery: CapturedDelivery;
  createdAt: Date;
  httpStatus: number | null;
  startedAt: Date;
  durationMs: number;
  /** The first KiB of the receiver's answer. */
  responseBody: string | null;
  /** The request as sent (WEBHOOK_KEEP_PAYLOADS), in the history row itself. */
  kept: KeptRequest | null;
  deliveredAt: Date;
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
    startedAt: Date;
    durationMs: number;
    httpStatus: number | null;
    error: string | null;
    responseBody: string | null;
    kept: KeptRequest | null;
  } | null;
  done: () => void;
}

/** Rows per statement at most. */
const MAX_BATCH = 5000;

export class Journal {
  #delivered: DeliveredEntry[] = [];
  #parked: ParkedEntry[] = [];
  #writing: Promise<void> | null = null;
  #closed = false;
  stats = { batches: 0, delivered: 0, parked: 0 };

  constructor(
    private readonly db: Queryable,
    private readonly onError: (err: Error) => void,
  ) {}

  get backlog(): number {
    return this.#delivered.length + this.#parked.length;
  }

  delivered(entry: DeliveredEntry): void {
    this.#delivered.push(entry);
    this.#start();
  }

  parked(entry: ParkedEntry): void {
    this.#parked.push(entry);
    this.#start();
  }

  /** No more writes (leadership ended); what is being written finishes or fails on its own. */
  close(): void {
    this.#closed = true;
    this.#delivered = [];
    this.#parked = [];
  }

  #start(): void {
    if (this.#writing || this.#closed) return;
    if (this.#delivered.length === 0 && this.#parked.length === 0) return;
    const delivered = this.#delivered.splice(0, MAX_BATCH);
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
      },
      (err: unknown) => {
        this.#writing = null;
        if (!this.#closed) this.onError(err as Error);
      },
    );
  }
}

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
