// `npm start`: the whole service on one machine. Without DATABASE_URL it runs an embedded
// PostgreSQL under DATA_DIR, migrates, and runs the api and the tailer in this process.
import path from 'node:path';
import { loadConfig } from '../config.js';
import { createContext } from '../context.js';
import { migrate } from '../db/migrate.js';
import { startApi } from '../http/api.js';
import { closeServer } from '../http/server.js';
import { registerTailerGauges, startTailerOps } from '../ops/tailer-ops.js';
import { findEnvironment } from '../projects/environments.js';
import { provisionEnvironment } from '../projects/provision.js';
import { DeliveryEngine } from '../delivery/engine.js';
import { WalTailer } from '../tailer/tailer.js';
import { createManagementToken } from '../webhooks/management-tokens.js';
import { openDatabase } from './database.js';
import { exitOnStartupError, stopOnSignals } from './lifecycle.js';

async function main(): Promise<void> {
  const config = loadConfig();
  const { createLogger } = await import('../log.js');
  const log = createLogger(config.logLevel);
  const database = await openDatabase(config, log);
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
  const delivery = new DeliveryEngine(ctx);
  delivery.start();
  const tailer = new WalTailer(ctx, { databaseUrl: database.url, sink: delivery });
  tailer.start();
  registerTailerGauges(ctx, tailer, delivery);
  // The tailer's health and metrics listener; on a busy port the dev setup carries on without it.
  const ops = await startTailerOps(ctx, tailer, config.tailerPort, config.host).catch((err: Error) => {
    log.warn({ port: config.tailerPort, err: err.message }, 'the tailer health listener could not start');
    return undefined;
  });
  // "walgate ready" means changes are being captured: wait (briefly) for the tailer to hold the
  // slot or stand by, so that a row written right after the banner is not missed by a test or a demo.
  for (const until = Date.now() + 15_000; tailer.status().role === 'starting' && Date.now() < until; ) {
    await new Promise((r) => setTimeout(r, 50));
  }
  // The embedded cluster is local and its password is in DATA_DIR anyway; an operator's URL is masked.
  const shownDb = database.embedded ? database.url : database.url.replace(/:[^:@/]*@/, ':***@');
  process.stdout.write(
    [
      `api:      ${api.url}`,
      `postgres: ${shownDb}${database.embedded ? ` (embedded, data in ${path.resolve(config.dataDir)})` : ''}`,
      `e-mail:   ${ctx.mailer.destination}`,
      ...(ops ? [`tailer:   ${ops.url} (health and metrics)`] : []),
      ...out,
      'walgate ready',
      '',
    ].join('\n'),
  );

  stopOnSignals(log, async () => {
    await api.stop();
    if (ops) await closeServer(ops.server, 2000);
    await tailer.stop();
    await delivery.stop();
    await ctx.close();
    await database.release();
  });
}

main().catch(exitOnStartupError);
