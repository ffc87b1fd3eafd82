import type { Command } from 'commander';
import {
  EnvironmentExistsError,
  listEnvironments,
  SchemaTakenError,
  updateEnvironment,
  type EnvironmentSettings,
} from '../projects/environments.js';
import { provisionEnvironment } from '../auth/provision.js';
import { CliError, table, withCliContext } from './runtime.js';
import { authOption, tokenFormatOption } from './options.js';

export function registerProjectCommands(program: Command): void {
  const project = program.command('project').description('create, change and list projects and their environments');

  project
    .command('create <projectId>')
    .description('create a project environment with its data schema and signing keys')
    .option('--environment <name>', 'environment name', 'master')
    .option('--schema <schema>', 'Postgres schema of its data tables (default <projectId>_<environment>)')
    .addOption(authOption())
    .addOption(tokenFormatOption())
    .action(async (projectId: string, o: { environment: string; schema?: string; auth?: boolean; tokenFormat?: 'jws' | 'jwe' }) => {
      await withCliContext(async (ctx) => {
        try {
          const env = await provisionEnvironment(ctx, {
            projectId,
            name: o.environment,
            schemaName: o.schema,
            authEnabled: o.auth,
            tokenFormat: o.tokenFormat,
          });
          console.log(
            `created ${env.projectId}/${env.name} (schema ${env.schemaName}, auth ${env.authEnabled ? 'on' : 'off'}, tokens ${env.tokenFormat})`,
          );
        } catch (err) {
          if (err instanceof EnvironmentExistsError || err instanceof SchemaTakenError) throw new CliError(err.message);
          if (err instanceof Error && /^invalid /.test(err.message)) throw new CliError(err.message);
          throw err;
        }
      });
    });

  project
    .command('set <projectId>')
    .description("change an environment's settings")
    .option('--environment <name>', 'environment name', 'master')
    .addOption(authOption())
    .addOption(tokenFormatOption())
    .action(async (projectId: string, o: { environment: string; auth?: boolean; tokenFormat?: 'jws' | 'jwe' }) => {
      const settings: EnvironmentSettings = { authEnabled: o.auth, tokenFormat: o.tokenFormat };
      if (Object.values(settings).every((v) => v === undefined)) throw new CliError('nothing to change: give --auth or --token-format');
      await withCliContext(async (ctx) => {
        const env = await updateEnvironment(ctx.pool, projectId, o.environment, settings);
        if (!env) throw new CliError(`no environment ${projectId}/${o.environment}`);
        console.log(`updated ${env.projectId}/${env.name}: auth ${env.authEnabled ? 'on' : 'off'}, tokens ${env.tokenFormat}`);
      });
    });

  project
    .command('list')
    .description('list projects and their environments')
    .option('--json', 'print JSON')
    .action(async (o: { json?: boolean }) => {
      await withCliContext(async (ctx) => {
        const envs = await listEnvironments(ctx.pool);
        const rows = envs.map((e) => ({
          project: e.projectId,
          environment: e.name,
          schema: e.schemaName,
          auth: e.authEnabled ? 'on' : 'off',
          tokens: e.tokenFormat,
          created: e.createdAt,
        }));
        console.log(
          o.json ? JSON.stringify(rows, null, 2) : table(rows, ['project', 'environment', 'schema', 'auth', 'tokens', 'created']),
        );
      });
    });
}
