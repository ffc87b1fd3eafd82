import type { Context } from '../core/context.js';
import { attemptRecord, conclude, keptRequest, waitRecord, type AttemptDeps, type AttemptOutcome } from './attempt.js';
import { breakerWaitBound } from './schedule.js';
import type { AttemptResult, ClaimedDelivery } from './sql/queue.js';

// The retry queue's side of an attempt's outcome (worker.ts): the result recorded on the claimed
// row, the worker's counts, and what the worker does next with the delivery.

/** What the queue worker counts of its attempts (logged with the delivery progress). */
export interface QueueStats {
  attempts: number;
  delivered: number;
  failed: number;
  dead: number;
  waits: number;
  /** Claim round trips that found due deliveries. */
  claims: number;
}

export interface QueueResult {
  /** Written on the claimed row, behind (worker.ts flush). */
  record: AttemptResult;
  /** Delivered or dead: a row-ordered delivery's row may go on once the record is written. */
  finished: boolean;
  /** When a retry is due, if one was scheduled. */
  retryAt: Date | null;
}

/** Turns the outcome of a claimed delivery's attempt, sent under `lease` with `body`, into its recorded result (counted in `stats`). */
export async function queueResult(
  ctx: Context,
  deps: AttemptDeps,
  d: ClaimedDelivery,
  sent: { lease: Date; body: string; outcome: AttemptOutcome },
  stats: QueueStats,
): Promise<QueueResult> {
  const { lease, body, outcome } = sent;
  const { webhooks } = ctx.config;
  // The subscription's own schedule, or its environment's (read with the claim); else the platform's.
  const delaysMs = d.retry_delays_ms ?? webhooks.retryDelaysMs;
  if (outcome.kind === 'waited') {
    // The breaker holds it: no request, no attempt spent; it goes when the breaker lets it.
    const wait = waitRecord(
      { deliveryId: d.id, lease, spent: d.attempts, scheduleStartedAt: d.schedule_started_at },
      outcome,
      breakerWaitBound(delaysMs, webhooks.breakerCooldownMs, webhooks.breakerMaxWaitMs),
    );
    stats.waits++;
    if (wait.status === 'dead') {
      stats.dead++;
      ctx.metrics.deliveriesFinished.inc({ status: 'dead' });
    }
    return { record: wait, finished: wait.status === 'dead', retryAt: null };
  }
  const attempt = d.attempts + 1;
  const concluded = await conclude(ctx, deps, outcome, {
    webhookId: d.webhook_id,
    attemptNo: attempt,
    delaysMs,
    committedAt: d.committed_at ?? d.lease,
  });
  const { step } = concluded;
  stats.attempts++;
  if (step.status === 'delivered') stats.delivered++;
  else if (step.status === 'dead') stats.dead++;
  else stats.failed++;
  return {
    record: attemptRecord(d.id, lease, attempt, outcome, concluded, keptRequest(webhooks.keepPayloads, body, outcome)),
    finished: step.status !== 'retrying',
    retryAt: step.status === 'retrying' ? step.nextAttemptAt : null,
  };
}
