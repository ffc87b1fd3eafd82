// `npm run tailer`: the WAL tailer daemon (and, with the delivery worker, the sender), for production.
import { loadConfig } from '../core/config.js';
import { createContext } from '../core/context.js';
import { migrate } from '../core/db/migrate.js';
import { requireLoadableExtraCaCerts } from './extra-ca-certs.js';
import { exitOnStartupError, stopOnSignals } from './lifecycle.js';
import { startTailerRuntime } from './tailer-runtime.js';

async function main(): Promise<void> {
  requireLoadableExtraCaCerts(); // before anything starts: a CA Node ignored would fail every TLS call
  const config = loadConfig();
  if (!config.databaseUrl) throw new Error('DATABASE_URL is required for `npm run tailer` (`npm start` runs on an embedded database)');
  const ctx = await createContext(config, config.databaseUrl, { applicationName: 'walgate-tailer' });
  await migrate(ctx.pool);
  const runtime = await startTailerRuntime(ctx, { databaseUrl: config.databaseUrl });
  ctx.log.info({ slot: runtime.tailer.status().slotName, ops: runtime.opsUrl }, 'tailer started');
  stopOnSignals(ctx.log, async () => {
    await runtime.stop();
    await ctx.close();
  });
}

main().catch(exitOnStartupError);
