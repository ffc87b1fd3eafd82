// `npm start`: the whole service on one machine. Without DATABASE_URL it runs an embedded
// PostgreSQL under DATA_DIR, migrates, and runs the api and the tailer in this process.
import path from 'node:path';
import { loadConfig } from '../core/config.js';
import { createContext } from '../core/context.js';
import { migrate } from '../core/db/migrate.js';
import { startApi } from './api-app.js';
import { findEnvironment } from '../projects/environments.js';
import { provisionEnvironment } from '../auth/provision.js';
import { createManagementToken } from '../webhooks/management-tokens.js';
import { openDatabase } from './database.js';
import { exitOnStartupError, stopOnSignals } from './lifecycle.js';
import { startTailerRuntime } from './tailer-runtime.js';
import { Pruner } from '../retention/pruner.js';

async function main(): Promise<void> {
  const config = loadConfig();
  const { consoleDestination, createLogger } = await import('../core/log.js');
  const log = createLogger(config.logLevel, await consoleDestination());
  // npm start owns its embedded database: it stops it on exit, also one left running by a killed run.
  const database = await openDatabase(config, log, { owner: true });
  const ctx = await createContext(config, database.url, { log, applicationName: 'walgate-api' });
  await migrate(ctx.pool);

  const out: string[] = [];
  // A first embedded start gets a demo project, so the quick start can go straight to curl.
  if (database.embedded && !(await findEnvironment(ctx.pool, 'demo', 'master'))) {
    await provisionEnvironment(ctx, { projectId: 'demo', name: 'master' });
    const { token } = await createManagementToken(ctx.pool, 'demo', 'created by npm start');
    out.push(`created project demo (environment master); its management token, shown only once:`, `  ${token}`);
  }

  const api = await startApi(ctx);
  const runtime = await startTailerRuntime(ctx, { databaseUrl: database.url, opsOptional: true });
  // The tailer runtime prunes the delivery history; the auth rows are the api's to prune.
  const authPruner = new Pruner(ctx, { scopes: ['auth'] });
  authPruner.start();
  // "walgate ready" means changes are being captured: wait (briefly) for the tailer to hold the
  // slot or stand by, so that a row written right after the banner is not missed by a test or a demo.
  for (const until = Date.now() + 15_000; runtime.tailer.status().role === 'starting' && Date.now() < until;) {
    await new Promise((r) => setTimeout(r, 50));
  }
  // The embedded cluster is local and its password is in DATA_DIR anyway; an operator's URL is masked.
  const shownDb = database.embedded ? database.url : database.url.replace(/:[^:@/]*@/, ':***@');
  process.stdout.write(
    [
      `api:      ${api.url}`,
      `postgres: ${shownDb}${database.embedded ? ` (embedded, data in ${path.resolve(config.dataDir)})` : ''}`,
      `e-mail:   ${ctx.mailer.destination}`,
      ...(runtime.opsUrl ? [`tailer:   ${runtime.opsUrl} (health and metrics)`] : []),
      ...out,
      'walgate ready',
      '',
    ].join('\n'),
  );

  stopOnSignals(log, async () => {
    await api.stop();
    await runtime.stop();
    await authPruner.stop();
    await ctx.close();
    await database.release();
  });
}

main().catch(exitOnStartupError);
