// `npm start`: the whole service on one machine. Without DATABASE_URL it runs an embedded
// PostgreSQL under DATA_DIR, migrates, and runs the api and the tailer in this process.
import path from 'node:path';
import { loadConfig, type Config } from '../core/config.js';
import type { Logger } from '../core/log.js';
import { createContext } from '../core/context.js';
import { migrate } from '../core/db/migrate.js';
import { startApi } from './api-app.js';
import { findEnvironment } from '../projects/environments.js';
import { provisionEnvironment } from '../auth/provision.js';
import { createManagementToken } from '../webhooks/management-tokens.js';
import { openDatabase, type Database } from './database.js';
import { requireLoadableExtraCaCerts } from './extra-ca-certs.js';
import { exitOnStartupError, stopOnSignals } from './lifecycle.js';
import { startTailerRuntime } from './tailer-runtime.js';
import { Pruner } from '../retention/pruner.js';
import { Teardown } from './teardown.js';

async function main(): Promise<void> {
  requireLoadableExtraCaCerts(); // before anything starts: a CA Node ignored would fail every TLS call
  const config = loadConfig();
  const { consoleDestination, createLogger } = await import('../core/log.js');
  const log = createLogger(config.logLevel, await consoleDestination());
  // Everything the start takes is let go on every way out: Ctrl-C (during the start too), a port
  // that is taken, a failed migration. The embedded Postgres runs in a session of its own (pg_ctl),
  // so nothing else stops it when this process ends.
  const teardown = new Teardown(log);
  // A second Ctrl-C does not wait for the drain, but still stops the cluster (one being started too).
  let database: Promise<Database> | undefined;
  const force = async () => (await database?.catch(() => undefined))?.embedded?.stop('immediate');
  let starting: Promise<void> | undefined;
  const stop = async () => {
    // A start under way ends at its next step (after what it is doing, e.g. starting the
    // cluster), having let go of that too; then everything it took is let go.
    teardown.interrupt();
    await starting?.catch(() => undefined);
    await teardown.run();
  };
  stopOnSignals(log, stop, { force });
  try {
    starting = start(config, log, teardown, (opening) => (database = opening));
    await starting;
  } catch (err) {
    // A signal stopped the start: its drain (stopOnSignals) ends the process.
    if (teardown.stopping) return;
    await teardown.run();
    exitOnStartupError(err);
  }
}

async function start(config: Config, log: Logger, teardown: Teardown, opening: (database: Promise<Database>) => void): Promise<void> {
  // npm start owns its embedded database: it stops it on exit, also one left running by a killed run.
  const open = openDatabase(config, log, { owner: true });
  opening(open);
  const database = await open;
  await teardown.add('database', () => database.release());
  const ctx = await createContext(config, database.url, { log, applicationName: 'walgate-api' });
  await teardown.add('connections', () => ctx.close());
  await migrate(ctx.pool);

  const out: string[] = [];
  // A first embedded start gets a demo project, so the quick start can go straight to curl.
  if (database.embedded && !(await findEnvironment(ctx.pool, 'demo', 'master'))) {
    await provisionEnvironment(ctx, { projectId: 'demo', name: 'master' });
    const { token } = await createManagementToken(ctx.pool, 'demo', 'created by npm start');
    out.push(`created project demo (environment master); its management token, shown only once:`, `  ${token}`);
  }

  const api = await startApi(ctx);
  await teardown.add('api', () => api.stop());
  const runtime = await startTailerRuntime(ctx, { databaseUrl: database.url, opsOptional: true });
  await teardown.add('tailer', () => runtime.stop());
  // The tailer runtime prunes the delivery history; the auth rows are the api's to prune.
  const authPruner = new Pruner(ctx, { scopes: ['auth'] });
  authPruner.start();
  await teardown.add('auth pruner', () => authPruner.stop());
  // "walgate ready" means changes are being captured: wait (briefly) for the tailer to hold the
  // slot or stand by, so that a row written right after the banner is not missed by a test or a demo.
  for (const until = Date.now() + 15_000; runtime.tailer.status().role === 'starting' && Date.now() < until;) {
    if (teardown.stopping) return;
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
}

main().catch(exitOnStartupError);
