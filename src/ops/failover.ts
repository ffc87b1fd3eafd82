import { Gauge } from 'prom-client';
import type { Context } from '../core/context.js';
import { failoverStatus } from '../tailer/failover.js';
import type { Check } from './checks.js';

// Whether the slot would survive a failover (tailer/failover.ts), as the tailer daemon reports it.

/**
 * `slot_failover` in /readyz: always there, with what was found. `degraded` (never failed: capture
 * works) when an operator asked for a failover copy and it is not there — TAILER_STANDBY_URL is set
 * and the standby has no valid synced copy — or when synchronized_standby_slots names a physical
 * slot no standby reads (the tailer then waits for it, and falls behind).
 */
export async function failoverCheck(ctx: Context, slotName: string): Promise<Check | undefined> {
  const status = await failoverStatus(ctx.pool, slotName, ctx.config.tailerStandbyUrl).catch(() => undefined);
  if (!status) return undefined; // Postgres does not answer: the database check says so
  const degraded = (ctx.config.tailerStandbyUrl !== undefined && !status.ready) || status.standbySlotsInactive.length > 0;
  return { name: 'slot_failover', state: degraded ? 'degraded' : 'ok', ok: true, detail: status };
}

/** walgate_slot_failover_ready: 1 while a standby keeps a synchronised copy of the slot. */
export function registerFailoverGauge(ctx: Context, slotName: string): void {
  const name = 'walgate_slot_failover_ready';
  if (ctx.metrics.registry.getSingleMetric(name)) return;
  new Gauge({
    name,
    help: 'Whether a standby keeps a synchronised copy of the replication slot (failover slot, Postgres 17+): 1 yes, 0 no',
    registers: [ctx.metrics.registry],
    async collect() {
      const status = await failoverStatus(ctx.pool, slotName, ctx.config.tailerStandbyUrl).catch(() => undefined);
      if (status) this.set(status.ready ? 1 : 0);
    },
  });
}
