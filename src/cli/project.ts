import type { Command } from 'commander';
import {
  EnvironmentExistsError,
  findEnvironment,
  listEnvironments,
  SchemaTakenError,
  updateEnvironment,
} from '../projects/environments.js';
import { readFileSync } from 'node:fs';
import { settingsPatch, viewSettings } from '../projects/settings.js';
import { provisionEnvironment } from '../auth/provision.js';
import { claimsFunctionProblem } from '../auth/claims/check.js';
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
    .description("change an environment's settings (the same ones as PATCH /api/rest/_environment) and print them")
    .option('--environment <name>', 'environment name', 'master')
    .addOption(authOption())
    .addOption(tokenFormatOption())
    .option(
      '--set <key=value>',
      'a setting, repeatable: e.g. lockoutThreshold=10, limits.login.points=50, corsOrigins=https://app.example.com,https://admin.example.com, providers=@providers.json (a JSON value read from a file)',
      (v: string, all: string[]) => [...all, v],
      [] as string[],
    )
    .action(async (projectId: string, o: { environment: string; auth?: boolean; tokenFormat?: 'jws' | 'jwe'; set: string[] }) => {
      const given: Record<string, unknown> = { authEnabled: o.auth, tokenFormat: o.tokenFormat };
      for (const pair of o.set) assignSetting(given, pair);
      if (Object.values(given).every((v) => v === undefined))
        throw new CliError('nothing to change: give --auth, --token-format or --set key=value');
      const parsed = settingsPatch.safeParse(given);
      if (!parsed.success) {
        throw new CliError(parsed.error.issues.map((i) => `${i.path.join('.') || '(settings)'}: ${i.message}`).join('\n'));
      }
      await withCliContext(async (ctx) => {
        // The same check as PATCH /api/rest/_environment: the function must exist as (jsonb, jsonb) → jsonb.
        const current = parsed.data.claimsFunction ? await findEnvironment(ctx.pool, projectId, o.environment) : undefined;
        const problem = current && (await claimsFunctionProblem(ctx.pool, current, parsed.data.claimsFunction!));
        if (problem) throw new CliError(`claimsFunction: ${problem}`);
        const env = await updateEnvironment(ctx.pool, projectId, o.environment, parsed.data, ctx.secrets);
        if (!env) throw new CliError(`no environment ${projectId}/${o.environment}`);
        console.log(`updated ${env.projectId}/${env.name}: auth ${env.authEnabled ? 'on' : 'off'}, tokens ${env.tokenFormat}`);
        console.log(JSON.stringify(viewSettings(env.settings), null, 2));
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

/**
 * `a.b=value` into `{a: {b: value}}`: numbers, booleans and null as such, `corsOrigins` and
 * `webauthn.origins` as comma-separated lists, `@path` as the JSON in that file (providers: a list
 * of objects, and their secrets stay out of the shell history).
 */
function assignSetting(target: Record<string, unknown>, pair: string): void {
  const eq = pair.indexOf('=');
  if (eq <= 0) throw new CliError(`--set wants key=value, got ${JSON.stringify(pair)}`);
  const path = pair.slice(0, eq).split('.');
  const raw = pair.slice(eq + 1);
  const value = raw.startsWith('@')
    ? readJsonFile(raw.slice(1))
    : path[0] === 'corsOrigins' || path.join('.') === 'webauthn.origins'
      ? raw === ''
        ? []
        : raw.split(',').map((s) => s.trim())
      : /^(-?\d+|true|false|null)$/.test(raw)
        ? JSON.parse(raw)
        : raw;
  let node = target;
  for (const key of path.slice(0, -1)) node = (node[key] ??= {}) as Record<string, unknown>;
  node[path.at(-1)!] = value;
}

function readJsonFile(file: string): unknown {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new CliError(`cannot read ${file}: ${(err as Error).message}`);
  }
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new CliError(`${file} is not JSON: ${(err as Error).message}`);
  }
}
