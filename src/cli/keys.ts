import type { Command } from 'commander';
import { listSigningKeys, rotateSigningKeys } from '../auth/keys.js';
import { publishCacheEvent } from '../core/cache-events.js';
import { findEnvironment, listEnvironments } from '../projects/environments.js';
import { CliError, progress, table, withCliContext } from './runtime.js';

export function registerKeyCommands(program: Command): void {
  const keys = program.command('keys').description('signing keys of access tokens (published in the JWKS)');

  keys
    .command('rotate')
    .description('promote the published next key to signing, retire the active one, publish a new next key')
    .requiredOption('--project <projectId>', 'project')
    .option('--environment <name>', 'one environment (default: every environment of the project)')
    .action(async (o: { project: string; environment?: string }) => {
      await withCliContext(async (ctx) => {
        const envs = o.environment
          ? [await findEnvironment(ctx.pool, o.project, o.environment)].filter((e) => e !== undefined)
          : await listEnvironments(ctx.pool, o.project);
        if (envs.length === 0) throw new CliError(`no environment ${o.project}/${o.environment ?? '*'}`);
        const bar = progress('rotated', envs.length);
        let done = 0;
        for (const env of envs) {
          const r = await rotateSigningKeys(ctx.pool, ctx.secrets, env, ctx.clock());
          await publishCacheEvent(ctx.pool, { kind: 'keys', projectId: env.projectId, name: env.name });
          console.log(`${env.projectId}/${env.name}: signing with ${r.active}; next ${r.next}; retired ${r.retired ?? '-'}`);
          bar.tick(++done);
        }
        bar.done(done);
        console.log('running api instances sign with the new key at once; tokens of the retired key keep working until they expire');
      });
    });

  keys
    .command('list')
    .description('list the signing keys of an environment')
    .requiredOption('--project <projectId>', 'project')
    .option('--environment <name>', 'environment name', 'master')
    .action(async (o: { project: string; environment: string }) => {
      await withCliContext(async (ctx) => {
        if (!(await findEnvironment(ctx.pool, o.project, o.environment)))
          throw new CliError(`no environment ${o.project}/${o.environment}`);
        const rows = (await listSigningKeys(ctx.pool, o.project, o.environment)).map((k) => ({
          kid: k.kid,
          alg: k.alg,
          state: k.state,
          created: k.createdAt,
          activated: k.activatedAt,
          'published until': k.state === 'retired' ? k.publishUntil : null,
        }));
        console.log(table(rows, ['kid', 'alg', 'state', 'created', 'activated', 'published until']));
      });
    });
}
