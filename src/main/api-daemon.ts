// The api daemon alone, for production (needs DATABASE_URL); started by api.ts.
import { loadConfig } from '../core/config.js';
import { createContext } from '../core/context.js';
import { migrate } from '../core/db/migrate.js';
import { startApi } from './api-app.js';
import { Pruner } from '../retention/pruner.js';
import { requireLoadableExtraCaCerts } from './extra-ca-certs.js';
import { exitOnStartupError, stopOnSignals } from './lifecycle.js';

async function main(): Promise<void> {
  requireLoadableExtraCaCerts(); // before anything starts: a CA Node ignored would fail every TLS call
  const config = loadConfig();
  if (!config.databaseUrl) throw new Error('DATABASE_URL is required for `npm run api` (`npm start` runs on an embedded database)');
  const ctx = await createContext(config, config.databaseUrl, { applicationName: 'walgate-api' });
  await migrate(ctx.pool);
  const api = await startApi(ctx);
  // The api prunes the auth rows it writes (sessions, codes, revocation entries, rate limits).
  const pruner = new Pruner(ctx, { scopes: ['auth'] });
  pruner.start();
  ctx.log.info({ url: api.url }, 'api listening');
  stopOnSignals(ctx.log, async () => {
    await api.stop();
    await pruner.stop();
    await ctx.close();
  });
}

main().catch(exitOnStartupError);
