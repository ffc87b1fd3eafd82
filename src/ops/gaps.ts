import { Gauge } from 'prom-client';
import type { Context } from '../core/context.js';
import { openGapCount } from '../tailer/gaps.js';
import type { Check } from './checks.js';

// Capture gaps as both daemons report them: read from Postgres, so they survive restarts and the
// api reports them while the tailer is down (or busy recreating its slot).

/**
 * `degraded` while a gap waits for acknowledgement; never fails readiness (the service works).
 * Absent otherwise (and when Postgres does not answer: the database check reports that).
 */
export async function gapCheck(ctx: Context): Promise<Check | undefined> {
  const open = await openGapCount(ctx.pool).catch(() => 0);
  return open > 0 ? { name: 'capture_gaps', state: 'degraded', ok: true, detail: { open } } : undefined;
}

/** walgate_capture_gaps_open: the alert "changes were lost" fires on it (docs/schema-changes.md). */
export function registerGapGauge(ctx: Context): void {
  const name = 'walgate_capture_gaps_open';
  if (ctx.metrics.registry.getSingleMetric(name)) return; // one per process registry
  new Gauge({
    name,
    help: 'Capture gaps (WAL whose changes were not captured: a lost or dropped slot) not acknowledged yet',
    registers: [ctx.metrics.registry],
    async collect() {
      const open = await openGapCount(ctx.pool).catch(() => undefined);
      if (open !== undefined) this.set(open);
    },
  });
}
