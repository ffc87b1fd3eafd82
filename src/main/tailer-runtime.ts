// The tailer side of walgate, wired once: the WAL reader, the delivery engine it feeds (the stream
// and the retry queue's worker), their gauges and the health/metrics listener. `npm run tailer` runs it alone; `npm start` beside the api.
import type { Context } from '../core/context.js';
import { BusSink } from '../delivery/bus/publisher.js';
import { openBus } from '../delivery/bus/jetstream.js';
import { DeliveryEngine } from '../delivery/engine.js';
import { closeServer } from '../http/server.js';
import { registerTailerGauges, startTailerOps } from '../ops/tailer-ops.js';
import { Pruner } from '../retention/pruner.js';
import { WalTailer } from '../tailer/tailer.js';
import { BackfillRunner } from '../tailer/backfill/runner.js';
import { disableWebhook } from '../webhooks/store.js';
import { listenErrorNamingSetting } from './port-setting.js';

export interface TailerRuntime {
  tailer: WalTailer;
  worker: DeliveryEngine;
  /** The health and metrics listener's URL; undefined when it could not start and that was allowed. */
  opsUrl: string | undefined;
  stop(): Promise<void>;
}

export interface TailerRuntimeOptions {
  databaseUrl: string;
  /** Carry on without the health listener when its port is busy (the dev setup); production fails. */
  opsOptional?: boolean;
}

/** The delivery engine of a tailer or a worker, its retry queue drained from now on (every process drains it). */
export function startDeliveryEngine(ctx: Context): DeliveryEngine {
  const engine = new DeliveryEngine(ctx, { disableSubscription: (id, reason, at) => disableWebhook(ctx.pool, id, reason, at) });
  engine.start();
  return engine;
}

export async function startTailerRuntime(ctx: Context, options: TailerRuntimeOptions): Promise<TailerRuntime> {
  const worker = startDeliveryEngine(ctx);
  // With a delivery bus the leading tailer publishes and the workers deliver; without, it delivers.
  const busConfig = ctx.config.bus;
  const bus = busConfig ? (await openBus(busConfig, 'walgate-tailer')).nc : null;
  const sink = bus && busConfig ? new BusSink(bus, busConfig, ctx.config.tailerMaxHeldBytes, ctx.log.child({ component: 'bus' })) : worker;
  // Backfills run where the slot is read: their watermarks come back through this tailer's session.
  const backfills: BackfillRunner = new BackfillRunner(ctx, {
    isLeader: (): boolean => tailer.status().role === 'leader',
    ...ctx.config.backfill,
  });
  const tailer = new WalTailer(ctx, {
    databaseUrl: options.databaseUrl,
    sink,
    onReservedMessage: backfills.onReservedMessage,
    onChange: backfills.onChange,
  });
  tailer.start();
  backfills.start();
  // Every tailer process prunes the delivery history (standbys too: batches skip each other's rows).
  const pruner = new Pruner(ctx, { scopes: ['history'] });
  pruner.start();
  registerTailerGauges(ctx, tailer, worker);
  const port = ctx.config.tailerPort;
  const ops = await startTailerOps(ctx, tailer, port, ctx.config.host).catch((err: Error) => {
    const named = listenErrorNamingSetting(err, 'TAILER_PORT', port, ctx.config.host) as Error;
    if (!options.opsOptional) throw named;
    ctx.log.warn({ port, err: named.message }, 'the tailer health listener could not start');
    return undefined;
  });
  return {
    tailer,
    worker,
    opsUrl: ops?.url,
    async stop() {
      if (ops) await closeServer(ops.server, 2000);
      await backfills.stop();
      await tailer.stop();
      await worker.stop();
      await bus?.close().catch(() => undefined);
      await pruner.stop();
    },
  };
}
