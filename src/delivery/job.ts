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
  settled: () => void;
}

/** Moves a job to its next state; a transition not in the table is a defect (thrown, the caller parks or logs it). */
export function move(job: Job, to: JobState): void {
  if (!TRANSITIONS[job.state].includes(to)) throw new Error(`delivery job cannot go from ${job.state} to ${to}`);
  job.state = to;
}

/** Per subscription: queued deliveries, requests in flight, deliveries finished this second and the last. */
export interface Lane {
  waiting: Job[];
  active: number;
  finished: number;
  finishedBefore: number;
}
