import type { Command } from 'commander';
import { KeyRing } from '../auth/keyring.js';
import { publishCacheEvent } from '../core/cache-events.js';
import { AuthService } from '../auth/service.js';
import { email as emailSchema } from '../auth/schemas.js';
import { findEnvironment } from '../projects/environments.js';
import { CliError, withCliContext } from './runtime.js';

export function registerUserCommands(program: Command): void {
  const users = program.command('users').description('end-user accounts');

  users
    .command('logout')
    .description('end every session of a user at once (force logout): their tokens are refused from now on')
    .requiredOption('--project <projectId>', 'project')
    .option('--environment <name>', 'environment name', 'master')
    .requiredOption('--email <email>', "the user's e-mail address")
    .action(async (o: { project: string; environment: string; email: string }) => {
      const email = emailSchema.safeParse(o.email);
      if (!email.success) throw new CliError(`not an e-mail address: ${o.email}`);
      await withCliContext(async (ctx) => {
        const env = await findEnvironment(ctx.pool, o.project, o.environment);
        if (!env) throw new CliError(`no environment ${o.project}/${o.environment}`);
        const ended = await new AuthService(ctx, new KeyRing(ctx)).forceLogout(env, email.data);
        // Revoked above in this shell's revocation list (Redis with REDIS_URL, else Postgres) and in
        // the session rows; every api adds the sessions to its own list too, wherever that is.
        const until = new Date(ctx.clock().getTime() + env.accessTokenTtlSeconds * 1000).toISOString();
        await publishCacheEvent(ctx.pool, { kind: 'sessions', sessionIds: ended, until });
        const n = ended.length;
        console.log(`ended ${n} session${n === 1 ? '' : 's'} of ${email.data} in ${o.project}/${o.environment}`);
      });
    });
}
