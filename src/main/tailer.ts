// `npm run tailer`: the WAL tailer daemon (and, with the delivery worker, the sender), for production.
import { loadConfig } from '../config.js';
import { createContext } from '../context.js';
import { migrate } from '../db/migrate.js';
import { DeliveryWorker } from '../delivery/worker.js';
import { closeServer } from '../http/server.js';
import { registerTailerGauges, startTailerOps } from '../ops/tailer-ops.js';
import { Pruner } from '../retention/pruner.js';
import { WalTailer } from '../tailer/tailer.js';
import { exitOnStartupError, stopOnSignals } from './lifecycle.js';

async function main(): Promise<void> {
  const config = loadConfig();
  if (!config.databaseUrl) throw new Error('DATABASE_URL is required for `npm run tailer` (`npm start` runs on an embedded database)');
  const ctx = await createContext(config, config.databaseUrl, { applicationName: 'walgate-tailer' });
  await migrate(ctx.pool);
  const tailer = new WalTailer(ctx, { databaseUrl: config.databaseUrl });
  tailer.start();
  const worker = new DeliveryWorker(ctx);
  worker.start();
  // Every tailer process prunes the delivery history (standbys too: batches skip each other's rows).
  const pruner = new Pruner(ctx, { scopes: ['history'] });
  pruner.start();
  registerTailerGauges(ctx, tailer, worker);
  const ops = await startTailerOps(ctx, tailer, config.tailerPort, config.host);
  ctx.log.info({ slot: tailer.status().slotName, ops: ops.url }, 'tailer started');
  stopOnSignals(ctx.log, async () => {
    await closeServer(ops.server, 2000);
    await tailer.stop();
    await worker.stop();
    await pruner.stop();
    await ctx.close();
  });
}

main().catch(exitOnStartupError);
