// `npm run tailer`: the WAL tailer daemon with its delivery engine (the stream and the retry queue), for production.
import { loadConfig } from '../config.js';
import { createContext } from '../context.js';
import { migrate } from '../db/migrate.js';
import { DeliveryEngine } from '../delivery/engine.js';
import { closeServer } from '../http/server.js';
import { registerTailerGauges, startTailerOps } from '../ops/tailer-ops.js';
import { WalTailer } from '../tailer/tailer.js';
import { exitOnStartupError, stopOnSignals } from './lifecycle.js';

async function main(): Promise<void> {
  const config = loadConfig();
  if (!config.databaseUrl) throw new Error('DATABASE_URL is required for `npm run tailer` (`npm start` runs on an embedded database)');
  const ctx = await createContext(config, config.databaseUrl, { applicationName: 'walgate-tailer' });
  await migrate(ctx.pool);
  const delivery = new DeliveryEngine(ctx);
  delivery.start();
  const tailer = new WalTailer(ctx, { databaseUrl: config.databaseUrl, sink: delivery });
  tailer.start();
  registerTailerGauges(ctx, tailer, delivery);
  const ops = await startTailerOps(ctx, tailer, config.tailerPort, config.host);
  ctx.log.info({ slot: tailer.status().slotName, ops: ops.url }, 'tailer started');
  stopOnSignals(ctx.log, async () => {
    await closeServer(ops.server, 2000);
    await tailer.stop();
    await delivery.stop();
    await ctx.close();
  });
}

main().catch(exitOnStartupError);
