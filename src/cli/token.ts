import type { Command } from 'commander';
import { listEnvironments } from '../projects/environments.js';
import { createManagementToken, listManagementTokens, revokeManagementToken } from '../webhooks/management-tokens.js';
import { CliError, table, withCliContext } from './runtime.js';

export function registerTokenCommands(program: Command): void {
  const token = program.command('token').description('management API tokens (for /api/rest/_webhooks)');

  token
    .command('create')
    .description('create a management token; the token is printed alone on the last line, once')
    .requiredOption('--project <projectId>', 'project the token may manage')
    .option('--name <label>', 'a label to recognise it by')
    .action(async (o: { project: string; name?: string }) => {
      await withCliContext(async (ctx) => {
        if ((await listEnvironments(ctx.pool, o.project)).length === 0) throw new CliError(`no project ${o.project}`);
        const { token: value, record } = await createManagementToken(ctx.pool, o.project, o.name);
        console.log(`created ${record.id} for project ${record.projectId}; it is shown only now:`);
        console.log(value);
      });
    });

  token
    .command('list')
    .description("list a project's management tokens (never their values)")
    .requiredOption('--project <projectId>', 'project')
    .action(async (o: { project: string }) => {
      await withCliContext(async (ctx) => {
        const rows = (await listManagementTokens(ctx.pool, o.project)).map((t) => ({
          id: t.id,
          name: t.name,
          created: t.createdAt,
          'last used': t.lastUsedAt,
          revoked: t.revokedAt,
        }));
        console.log(table(rows, ['id', 'name', 'created', 'last used', 'revoked']));
      });
    });

  token
    .command('revoke <tokenId>')
    .description('revoke a management token at once')
    .action(async (tokenId: string) => {
      await withCliContext(async (ctx) => {
        if (!(await revokeManagementToken(ctx.pool, tokenId, ctx.clock()))) throw new CliError(`no live token ${tokenId}`);
        console.log(`revoked ${tokenId}`);
      });
    });
}
