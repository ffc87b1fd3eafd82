import type { Context } from '../core/context.js';
import { attempt, type AttemptDeps } from './attempt.js';
import { batchBody } from './batch.js';
import type { ClaimedSend } from './batch-claims.js';
import type { BreakerKey } from './breaker.js';
import { openHeaders } from './custom-headers.js';
import { queueResult, type QueueResult, type QueueStats } from './queue-result.js';
import type { OpenedSecrets } from './secret.js';
import { renewBatchLease } from './sql/batches.js';
import { postpone, renewLease, type ClaimedDelivery } from './sql/queue.js';

// One request of the retry queue's worker (worker.ts): a claimed delivery alone, or a batch
// (batch-claims.ts) — through the endpoint's breaker, signed, POSTed — and each delivery's
// result. A batch's members share its answer: 2xx delivers them all, anything else retries them
// all, and they stay one batch. A row's run is sent one change at a time (sendRun).

/** A lease must outlast the time-out by this much when a request starts. */
const LEASE_MARGIN_MS = 5000;

export function endpointOf(d: ClaimedDelivery): BreakerKey {
  return { projectId: d.project_id, environment: d.environment, url: d.url };
}

/** Sends a claimed request; its deliveries' results, or null when the claim was lost before the send (nothing sent). */
export async function sendClaimed(
  ctx: Context,
  deps: AttemptDeps,
  send: ClaimedSend,
  o: { leaseMs: number; opened: OpenedSecrets; stats: QueueStats },
): Promise<QueueResult[] | null> {
  const first = send.deliveries[0]!;
  // The lease counts from the send: renew it (with the claim's lease as the token) unless it
  // still covers a whole attempt; a renewal that finds another worker's claim sends nothing.
  let lease = first.lease;
  const now = ctx.clock().getTime();
  if (lease.getTime() - now < ctx.config.webhooks.timeoutMs + LEASE_MARGIN_MS) {
    const until = new Date(now + o.leaseMs);
    const renewed =
      send.batchId === null
        ? (await renewLease(ctx.pool, first.id, lease, until)) !== null
        : await renewBatchLease(
            ctx.pool,
            send.deliveries.map((d) => d.id),
            lease,
            until,
          );
    if (!renewed) return null;
    lease = until;
  }
  const outcome = await attempt(deps, {
    endpoint: endpointOf(first),
    pool: first.webhook_id,
    url: new URL(first.url),
    secrets: first.previous_secret ? [o.opened.open(first.secret), o.opened.open(first.previous_secret)] : [o.opened.open(first.secret)],
    eventId: send.batchId ?? first.delivery_event_id,
    operation: send.batchId === null ? ((first.operation ?? first.event_type) as ClaimedDelivery['operation']) : 'BATCH',
    body: send.batchId === null ? send.bodies[0]! : batchBody(send.bodies),
    headers: openHeaders(ctx.secrets, first.header_values),
  });
  const results: QueueResult[] = [];
  // Each member keeps its own body (what it adds to the batch): a later retry rebuilds the batch from them.
  for (const [i, d] of send.deliveries.entries())
    results.push(await queueResult(ctx, deps, d, { lease, body: send.bodies[i]!, outcome }, o.stats));
  return results;
}

/**
 * A row's run (batch-claims.ts): each change alone, in commit order, the next once the one before
 * was delivered — no claim round trip between them. `record` takes each request's results as
 * they come. The first change that is not delivered (a failure, a wait on the breaker, a lost
 * claim) or a stop ends the run; the changes after it go back to the queue, due now and still
 * behind it in their row.
 */
export async function sendRun(
  ctx: Context,
  deps: AttemptDeps,
  run: ClaimedSend,
  o: { leaseMs: number; opened: OpenedSecrets; stats: QueueStats },
  record: (one: ClaimedSend, results: QueueResult[]) => Promise<void>,
  stopping: () => boolean,
): Promise<void> {
  let next = 0;
  while (next < run.deliveries.length && !stopping()) {
    const one: ClaimedSend = { deliveries: [run.deliveries[next]!], bodies: [run.bodies[next]!], batchId: null };
    const results = await sendClaimed(ctx, deps, one, o);
    if (!results) break; // its claim was lost: another worker has it, and the rest wait behind it
    next++;
    await record(one, results);
    if (results[0]!.record.status !== 'delivered') break;
  }
  await postpone(ctx.pool, run.deliveries.slice(next), ctx.clock());
}
