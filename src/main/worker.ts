// `npm run worker`: a delivery worker of the bus (DELIVERY_BUS): it delivers what the leading
// tailer publishes, for the partitions it holds. Run as many as the load needs.
import { loadConfig } from '../core/config.js';
import { createContext } from '../core/context.js';
import { migrate } from '../core/db/migrate.js';
import { requireLoadableExtraCaCerts } from './extra-ca-certs.js';
import { exitOnStartupError, stopOnSignals } from './lifecycle.js';
import { startWorkerRuntime } from './worker-runtime.js';

async function main(): Promise<void> {
  requireLoadableExtraCaCerts();
  const config = loadConfig();
  if (!config.databaseUrl) throw new Error('DATABASE_URL is required for `npm run worker`');
  if (!config.bus)
    throw new Error('DELIVERY_BUS is required for `npm run worker` (nats://host:4222, the servers of the JetStream cluster)');
  const ctx = await createContext(config, config.databaseUrl, { applicationName: 'walgate-worker' });
  await migrate(ctx.pool);
  const runtime = await startWorkerRuntime(ctx, config.databaseUrl);
  ctx.log.info({ stream: config.bus.stream, partitions: config.bus.partitions, ops: runtime.opsUrl }, 'delivery worker started');
  stopOnSignals(ctx.log, async () => {
    await runtime.stop();
    await ctx.close();
  });
}

main().catch(exitOnStartupError);
