import type { Command } from 'commander';
import { listEnvironments } from '../projects/environments.js';
import { listDestinations, subscriptionsUsing } from '../webhooks/destinations/store.js';
import { destinationView } from '../webhooks/destinations/view.js';
import { CliError, table, withCliContext } from './runtime.js';

export function registerDestinationCommands(program: Command): void {
  const destinations = program
    .command('destinations')
    .description('broker destinations (NATS JetStream, RabbitMQ) of an environment; managed over /api/rest/_destinations');

  destinations
    .command('list')
    .description("an environment's destinations, which credentials are set (never their values) and how many subscriptions use each")
    .requiredOption('--project <projectId>', 'project')
    .option('--environment <name>', 'environment', 'master')
    .action(async (o: { project: string; environment: string }) => {
      await withCliContext(async (ctx) => {
        if (!(await listEnvironments(ctx.pool, o.project)).some((e) => e.name === o.environment)) {
          throw new CliError(`no environment ${o.environment} in project ${o.project}`);
        }
        const rows = [];
        for (const d of await listDestinations(ctx.pool, o.project, o.environment, 1000)) {
          const v = destinationView(d);
          const set = Object.entries(v.credentials).filter(([, isSet]) => isSet);
          rows.push({
            id: v.id,
            name: v.name,
            kind: v.kind,
            url: v.url,
            credentials: set.map(([name]) => name).join(', ') || 'none',
            subscriptions: String((await subscriptionsUsing(ctx.pool, d.id)).length),
          });
        }
        console.log(table(rows, ['id', 'name', 'kind', 'url', 'credentials', 'subscriptions']));
      });
    });
}
