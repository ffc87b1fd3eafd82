import type Denque from 'denque';
import type { HeldDeliveries } from './payload-bytes.js';
import type { CapturedDelivery, CapturedEvent } from '../tailer/sink.js';

// A delivery the stream holds, and the one state it is in. Every change of state goes through
// move(), which refuses a transition the stream does not make: a settled delivery is never
// started again, a finished one never settles twice.
//
//   ordering ──▶ waiting ──▶ sending ──▶ settling ──▶ finished
//       │           │           │                         ▲
//       └───────────┴───────────┼──▶ settling             │
//                               ├──▶ parked-sending ──────┤
//                               └─────────────────────────┘ (subscription gone)
//
// - ordering: row-ordered, waiting in memory for its row's previous change (row-order.ts).
// - waiting: in its subscription's lane, for a slot.
// - sending: its attempt is under way.
// - parked-sending: parked while its attempt was under way (past its bound, paused, breaker
//   open); its row in the retry queue is leased to that attempt until `lease`.
// - settling: handed to the journal (delivered or parked); finished once the write commits.
// - finished: settled; the stream no longer holds it.

export type JobState = 'ordering' | 'waiting' | 'sending' | 'parked-sending' | 'settling' | 'finished';

const TRANSITIONS: Record<JobState, readonly JobState[]> = {
  ordering: ['waiting', 'settling'],
  waiting: ['sending', 'settling'],
  sending: ['settling', 'parked-sending', 'finished'],
  'parked-sending': ['finished'],
  settling: ['finished'],
  finished: [],
};

export interface Job {
  event: CapturedEvent;
  delivery: CapturedDelivery;
  createdAt: Date;
  /** When it is parked if not delivered by then (ms since the epoch). */
  deadline: number;
  state: JobState;
  /** Once parked while sending: the parked row's due time, the lease its late result is recorded with. */
  lease: Date | null;
  /**
   * Once parked while sending: resolves true when that park is committed (false when the stream
   * closed first). A late answer is recorded only after it: recorded before, it found no row and
   * was lost, and the change was sent again once the lease ran out.
   */
  parkWritten?: Promise<boolean>;
  /** Its body, rendered once when its lane gathers a batch (batch.ts: its bytes count). */
  body?: string;
  /**
   * Once taken into a batch: the batch's id and its members. Every park of it carries the id, so
   * the retry queue sends the batch again whole (batch-claims.ts); the members are parked together.
   */
  batch?: { id: string; jobs: Job[] };
  settled: () => void;
}

/** Moves a job to its next state; a transition not in the table is a defect (thrown, the caller parks or logs it). */
export function move(job: Job, to: JobState): void {
  if (!TRANSITIONS[job.state].includes(to)) throw new Error(`delivery job cannot go from ${job.state} to ${to}`);
  job.state = to;
}

/** Per subscription: queued deliveries, requests in flight, deliveries finished this second and the last. */
export interface Lane {
  /** Its project (the schema of its first change until its subscription is loaded): the fair share's unit. */
  tenant: string;
  /** First in, first out: taking from the front costs the same at any length (an array's splice moved every element left). */
  waiting: Denque<Job>;
  active: number;
  finished: number;
  finishedBefore: number;
}

export interface StreamLimits {
  /** Requests in flight at once from the stream, over all subscriptions. */
  concurrency: number;
  /** Requests in flight at once for one subscription. */
  perWebhook: number;
  /** Deliveries held in memory (waiting, in flight, being recorded) before reading waits. */
  maxHeld: number;
  /** Their accounting, shared with the retry queue's worker (its claims take what the stream leaves of the byte budget). */
  held?: HeldDeliveries;
  /** A delivery not delivered within this bound of being read is parked (WEBHOOK_PARK_AFTER_MS). */
  parkAfterMs: number;
  /** The sender's time-out: a request parked while in flight holds its lease this long. */
  timeoutMs: number;
  retryDelaysMs: readonly number[];
  /** Whether other tailer processes run (they drain the retry queue too). */
  sharing: () => boolean;
  /** The retry queue's requests in flight to a subscription in this process: perWebhook counts them too. */
  queueActive?: (webhookId: string) => number;
  /** Row ordering: keys of one subscription kept in memory at most (row-order.ts). */
  maxOrderKeys?: number;
  /** Row ordering: how often blocked keys are checked against the retry queue. */
  orderRefreshMs?: number;
}
