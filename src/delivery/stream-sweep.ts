import type { Job } from './job.js';
import type { StreamLanes } from './lanes.js';
import type { ParkState } from './stream-settle.js';

/**
 * The stream's sweep (every quarter of WEBHOOK_PARK_AFTER_MS): what is past its bound is parked —
 * waiting deliveries due now, those in flight leased to their attempt (its answer comes within the
 * sender's time-out: the retry queue leaves it alone until then). A batch's members go together,
 * under one lease: the retry queue claims them as one.
 */
export function sweepPastBound(
  now: Date,
  timeoutMs: number,
  lanes: StreamLanes,
  sending: Iterable<Job>,
  park: (job: Job, state: ParkState) => void,
): void {
  const t = now.getTime();
  lanes.takeWaiting(
    (j) => j.deadline <= t,
    (job) => park(job, { status: 'pending', attempts: 0, nextAttemptAt: now }),
  );
  for (const job of sending) {
    if (job.deadline > t || job.state !== 'sending') continue;
    const lease = new Date(t + timeoutMs + 5000);
    for (const member of job.batch?.jobs ?? [job]) {
      if (member.state === 'sending') park(member, { status: 'pending', attempts: 0, nextAttemptAt: lease });
    }
  }
}
