import type { Server } from 'node:http';
import { Gauge } from 'prom-client';
import type { NatsConnection } from '@nats-io/transport-node';
import type { Context } from '../core/context.js';
import type { BusWorker } from '../delivery/bus/worker.js';
import type { DeliveryEngine } from '../delivery/engine.js';
import { checkOf, databaseCheck, readiness } from './checks.js';
import { startOpsListener } from './listener.js';
import { registerBreakerGauge } from './tailer-ops.js';

/** A delivery worker's gauges: the partitions it holds, and its breakers. */
export function registerWorkerGauges(ctx: Context, worker: BusWorker, engine: DeliveryEngine): void {
  new Gauge({
    name: 'walgate_bus_partitions_held',
    help: 'Partitions of the delivery bus this worker reads now',
    registers: [ctx.metrics.registry],
    collect() {
      this.set(worker.partitions.length);
    },
  });
  registerBreakerGauge(ctx, engine);
}

/** The worker's own listener (WORKER_PORT): ready while Postgres answers, the bus is connected and its lock connection is held. */
export function startWorkerOps(
  ctx: Context,
  worker: BusWorker,
  bus: NatsConnection,
  port: number,
  host: string,
): Promise<{ server: Server; url: string }> {
  return startOpsListener(ctx, port, host, async () =>
    readiness([
      await databaseCheck(ctx.pool, ctx.log),
      checkOf('bus', !bus.isClosed() && bus.getServer() !== '', { server: bus.getServer() }),
      checkOf('worker', worker.holding, { partitions: worker.partitions }),
    ]),
  );
}
