import {
  attemptRecord,
  BREAKER_OPEN,
  waitRecord,
  type Concluded,
  type KeptRequest,
  type SentAttempt,
  type WaitedAttempt,
} from './attempt.js';
import type { Job } from './job.js';
import type { DeliveredEntry, ParkedEntry } from './journal.js';
import type { AttemptResult } from './sql/queue.js';
import type { Target } from './targets.js';

// What the stream does with one delivery once its request has an outcome (stream.ts applies it):
// the same for a delivery sent alone and for each member of a batch (batch.ts), which shares
// its batch's answer.

/** A park's new state in the retry queue. */
export interface ParkState {
  status: ParkedEntry['status'];
  attempts: number;
  nextAttemptAt: Date;
  httpStatus?: number | null;
  lastError?: string | null;
}

export type Settlement =
  /** Parked while in flight: the outcome is recorded on its leased row (`finished`: delivered or dead). */
  | { kind: 'late'; record: AttemptResult; finished: boolean }
  /** Answered 2xx: its history row (or count). */
  | { kind: 'delivered'; entry: Omit<DeliveredEntry, 'done'> }
  /** Failed, or held by the breaker: parked in the retry queue with what happened. */
  | { kind: 'park'; state: ParkState; attempt: ParkedEntry['attempt'] };

/** After an answer (or a failure to get one). `kept`: what its row keeps of the request (WEBHOOK_KEEP_PAYLOADS). */
export function settleAnswer(job: Job, target: Target, sent: SentAttempt, concluded: Concluded, kept: KeptRequest | null): Settlement {
  const { result, startedAt } = sent;
  const { step, at } = concluded;
  // Parked while in flight: its row is in the retry queue, leased to this attempt; the attempt is
  // recorded there unless a worker has taken the row since (the lease is the token).
  if (job.lease !== null)
    return {
      kind: 'late',
      record: attemptRecord(job.delivery.id, job.lease, 1, sent, concluded, kept),
      finished: step.status !== 'retrying',
    };
  if (result.ok) {
    return {
      kind: 'delivered',
      entry: {
        delivery: job.delivery,
        history: target.history,
        createdAt: job.createdAt,
        httpStatus: result.status,
        startedAt,
        durationMs: result.durationMs,
        responseBody: result.responseBody,
        kept,
        deliveredAt: at,
        batchId: job.batch?.id ?? null,
      },
    };
  }
  return {
    kind: 'park',
    state: {
      status: step.status === 'dead' ? 'dead' : 'retrying',
      attempts: 1,
      nextAttemptAt: step.nextAttemptAt ?? at,
      httpStatus: result.status,
      lastError: result.error,
    },
    attempt: {
      startedAt,
      durationMs: result.durationMs,
      httpStatus: result.status,
      error: result.error,
      responseBody: result.responseBody,
      kept,
    },
  };
}

/**
 * The endpoint's breaker held the request: parked with no attempt spent, due when the breaker
 * lets a request go (sooner when it closes: a retry slot, catch-up.ts), its wait in the log.
 */
export function settleWait(job: Job, waited: WaitedAttempt): Settlement {
  if (job.lease !== null) {
    // Parked while it was being admitted: its row is leased to this attempt; the wait is recorded there.
    const record = waitRecord(
      { deliveryId: job.delivery.id, lease: job.lease, spent: 0, scheduleStartedAt: job.createdAt },
      waited,
      Infinity,
    );
    return { kind: 'late', record, finished: true };
  }
  return {
    kind: 'park',
    state: { status: 'pending', attempts: 0, nextAttemptAt: waited.until, lastError: BREAKER_OPEN },
    attempt: {
      kind: 'wait',
      startedAt: waited.startedAt,
      durationMs: 0,
      httpStatus: null,
      error: BREAKER_OPEN,
      responseBody: null,
      kept: null,
    },
  };
}
