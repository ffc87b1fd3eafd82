// A delivery worker, wired once: the delivery engine (its stream fed from the bus, its retry-queue
// worker), the bus connection, and the partitions it holds. `npm run worker` runs it.
import type { Context } from '../core/context.js';
import { openBus } from '../delivery/bus/jetstream.js';
import { BusWorker } from '../delivery/bus/worker.js';
import type { DeliveryEngine } from '../delivery/engine.js';
import { closeServer } from '../http/server.js';
import { registerWorkerGauges, startWorkerOps } from '../ops/worker-ops.js';
import { listenErrorNamingSetting } from './port-setting.js';
import { startDeliveryEngine } from './tailer-runtime.js';

export interface WorkerRuntime {
  worker: BusWorker;
  engine: DeliveryEngine;
  /** The health and metrics listener's URL. */
  opsUrl: string;
  stop(): Promise<void>;
}

export async function startWorkerRuntime(ctx: Context, databaseUrl: string): Promise<WorkerRuntime> {
  const bus = ctx.config.bus;
  if (!bus) throw new Error('DELIVERY_BUS is required for a delivery worker (nats://host:4222, the servers of the JetStream cluster)');
  const { nc, jsm } = await openBus(bus, 'walgate-worker');
  const engine = startDeliveryEngine(ctx);
  const worker = new BusWorker(ctx, engine, nc, jsm, bus, { databaseUrl });
  worker.start();
  registerWorkerGauges(ctx, worker, engine);
  const port = ctx.config.workerPort;
  const ops = await startWorkerOps(ctx, worker, nc, port, ctx.config.host).catch((err: Error) => {
    throw listenErrorNamingSetting(err, 'WORKER_PORT', port, ctx.config.host) as Error;
  });
  return {
    worker,
    engine,
    opsUrl: ops.url,
    async stop() {
      await closeServer(ops.server, 2000);
      await worker.stop();
      await engine.stop();
      await nc.close().catch(() => undefined);
    },
  };
}
