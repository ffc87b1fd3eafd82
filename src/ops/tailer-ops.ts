import type { Server } from 'node:http';
import { Gauge } from 'prom-client';
import type { Context } from '../core/context.js';
import { backlogBySubscription, queueDepth } from '../delivery/sql/queue.js';

import { slotHealth, type SlotHealth } from '../tailer/slot-health.js';
import type { WalTailer } from '../tailer/tailer.js';
import { checkOf, databaseCheck, readiness, redisCheck } from './checks.js';
import { gapCheck, registerGapGauge } from './gaps.js';
import { failoverCheck, registerFailoverGauge } from './failover.js';
import { startOpsListener } from './listener.js';

/**
 * The slot's health for one scrape: the gauges below all read it, and a scrape collects them
 * together, so one query serves them all (a second later it is read again).
 */
function slotHealthPerScrape(ctx: Context, slotName: string): () => Promise<SlotHealth | undefined> {
  let last: { at: number; value: Promise<SlotHealth | undefined> } | undefined;
  return () => {
    if (!last || Date.now() - last.at > 1000) {
      last = { at: Date.now(), value: slotHealth(ctx.pool, slotName, ctx.config.slotWalWarnBytes).catch(() => undefined) };
    }
    return last.value;
  };
}

/** Gauges of the tailer daemon read from Postgres (and from the worker) when /metrics is scraped. */
import type { DeliveryEngine } from '../delivery/engine.js';
export function registerTailerGauges(ctx: Context, tailer: WalTailer, worker: DeliveryEngine | undefined): void {
  const { registry } = ctx.metrics;
  registerGapGauge(ctx);
  registerFailoverGauge(ctx, tailer.status().slotName);
  new Gauge({
    name: 'walgate_deliveries_queued',
    help: 'Deliveries waiting, by status: pending, retrying, dead (dead letters)',
    labelNames: ['status'] as const,
    registers: [registry],
    async collect() {
      const depth = await queueDepth(ctx.pool).catch(() => undefined);
      if (depth) for (const [status, n] of Object.entries(depth)) this.set({ status }, n);
    },
  });
  new Gauge({
    name: 'walgate_subscription_backlog',
    // One series per subscription with unfinished deliveries, by id only (never its URL); a
    // subscription whose backlog is gone, or that is deleted, has none.
    help: 'Unfinished (pending or retrying) deliveries per subscription that has any',
    labelNames: ['subscription'] as const,
    registers: [registry],
    async collect() {
      const backlog = await backlogBySubscription(ctx.pool).catch(() => undefined);
      if (!backlog) return;
      this.reset();
      for (const [subscription, n] of backlog) this.set({ subscription }, n);
    },
  });
  const health = slotHealthPerScrape(ctx, tailer.status().slotName);
  new Gauge({
    name: 'walgate_replication_lag_bytes',
    help: 'WAL written since the position the slot has confirmed',
    registers: [registry],
    async collect() {
      const h = await health();
      if (h?.lagBytes != null) this.set(h.lagBytes);
    },
  });
  new Gauge({
    name: 'walgate_replication_retained_bytes',
    help: 'WAL the slot keeps on the server (since its restart_lsn)',
    registers: [registry],
    async collect() {
      const h = await health();
      if (h?.retainedBytes != null) this.set(h.retainedBytes);
    },
  });
  new Gauge({
    name: 'walgate_replication_retained_warning',
    help: '1 when the slot retains more WAL than half of max_slot_wal_keep_size (or SLOT_WAL_WARN_BYTES when unlimited)',
    registers: [registry],
    async collect() {
      const h = await health();
      if (h?.retainedBytes != null) this.set(h.retainedBytes > h.warnBytes ? 1 : 0);
    },
  });
  new Gauge({
    name: 'walgate_replication_safe_wal_size_bytes',
    help: "Postgres's safe_wal_size of the slot: WAL that can still be written before the slot is lost (absent when unlimited)",
    registers: [registry],
    async collect() {
      const h = await health();
      if (h?.safeWalSize != null) this.set(h.safeWalSize);
    },
  });
  new Gauge({
    name: 'walgate_replication_slot_status',
    help: "1 for the slot's wal_status (reserved, extended, unreserved, lost)",
    labelNames: ['wal_status'] as const,
    registers: [registry],
    async collect() {
      this.reset();
      const h = await health();
      if (h?.walStatus) this.set({ wal_status: h.walStatus }, 1);
    },
  });
  new Gauge({
    name: 'walgate_tailer_leading',
    help: '1 when this process reads the slot, 0 when it stands by',
    registers: [registry],
    collect() {
      this.set(tailer.status().role === 'leader' ? 1 : 0);
    },
  });
  if (worker) registerBreakerGauge(ctx, worker);
}

/** Endpoints whose breaker is open, as this process sees them (a tailer's or a delivery worker's engine). */
export function registerBreakerGauge(ctx: Context, engine: DeliveryEngine): void {
  new Gauge({
    name: 'walgate_breaker_open',
    // No URL, project or endpoint label: a URL's path and query may hold a receiver's secret, and
    // a label per URL ever used grows without bound. Which subscription: its health view.
    help: 'Endpoints whose circuit breaker is open or half-open, as this process sees them, by state',
    labelNames: ['state'] as const,
    registers: [ctx.metrics.registry],
    collect() {
      const counts = { open: 0, 'half-open': 0 };
      for (const b of engine.breakerStates()) if (b.state !== 'closed') counts[b.state]++;
      for (const [state, n] of Object.entries(counts)) this.set({ state }, n);
    },
  });
}

/** The tailer's own listener (TAILER_PORT): /healthz, /readyz, /metrics. */
export function startTailerOps(ctx: Context, tailer: WalTailer, port: number, host: string): Promise<{ server: Server; url: string }> {
  return startOpsListener(ctx, port, host, async () => {
    const status = tailer.status();
    const slot = await slotHealth(ctx.pool, status.slotName, ctx.config.slotWalWarnBytes).catch(() => undefined);
    const role = checkOf('tailer', status.role === 'leader' || status.role === 'standby', {
      role: status.role,
      slot: status.slotName,
      durableLsn: status.durableLsn,
      ...slot,
    });
    return readiness([
      await databaseCheck(ctx.pool, ctx.log),
      await redisCheck(ctx.redis, ctx.log),
      role,
      await gapCheck(ctx),
      await failoverCheck(ctx, status.slotName),
    ]);
  });
}
