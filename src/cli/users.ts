import type { Command } from 'commander';
import { email as emailSchema } from '../auth/schemas.js';
import { UserAdminService } from '../auth/users/service.js';
import type { Context } from '../core/context.js';
import { AppError } from '../core/errors.js';
import { findEnvironment, type Environment } from '../projects/environments.js';
import { CliError, table, withCliContext } from './runtime.js';

// `walgate users …`: the admin API's twins, for operators at a shell. Each acts through the same
// service as the API and appends the same audit rows (the actor is `cli`).

interface Scope {
  project: string;
  environment: string;
}

const ORIGIN = { actor: 'cli' };
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Runs `fn` with the environment and the service; a service error becomes the CLI's message. */
async function withUsers<T>(o: Scope, fn: (users: UserAdminService, env: Environment, ctx: Context) => Promise<T>): Promise<T> {
  return withCliContext(async (ctx) => {
    const env = await findEnvironment(ctx.pool, o.project, o.environment);
    if (!env) throw new CliError(`no environment ${o.project}/${o.environment}`);
    try {
      return await fn(new UserAdminService(ctx), env, ctx);
    } catch (err) {
      if (err instanceof AppError) throw new CliError(err.message);
      throw err;
    }
  });
}

/** A user named by id or e-mail address. */
async function resolveUser(users: UserAdminService, env: Environment, who: string): Promise<string> {
  if (UUID.test(who)) return who;
  const email = emailSchema.safeParse(who);
  if (!email.success) throw new CliError(`not a user id or an e-mail address: ${who}`);
  const id = await users.idByEmail(env, email.data);
  if (!id) throw new CliError(`no user ${email.data} in ${env.projectId}/${env.name}`);
  return id;
}

function scoped(cmd: Command): Command {
  return cmd.requiredOption('--project <projectId>', 'project').option('--environment <name>', 'environment name', 'master');
}

const print = (value: unknown) => console.log(JSON.stringify(value, null, 2));

export function registerUserCommands(program: Command): void {
  const users = program.command('users').description('end-user accounts');

  scoped(users.command('list').description('search users, newest first'))
    .option('--query <prefix>', 'an e-mail prefix')
    .option('--status <status>', 'unverified, active, locked or disabled')
    .option('--json', 'print JSON')
    .action(async (o: Scope & { query?: string; status?: string; json?: boolean }) => {
      if (o.status && !['unverified', 'active', 'locked', 'disabled'].includes(o.status)) throw new CliError(`unknown status ${o.status}`);
      await withUsers(o, async (svc, env) => {
        const page = await svc.list(env, { query: o.query, status: o.status as never });
        if (o.json) print(page);
        else console.log(table(page.users, ['id', 'email', 'status', 'createdAt']));
      });
    });

  scoped(users.command('show <user>').description('a user (id or e-mail), their sessions, recent e-mails and events')).action(
    async (who: string, o: Scope) => {
      await withUsers(o, async (svc, env) => {
        const id = await resolveUser(svc, env, who);
        print({ ...(await svc.get(env, id)), events: (await svc.userEvents(env, id, {})).events });
      });
    },
  );

  scoped(users.command('create <email>').description('create a user with a password, or invite them by e-mail'))
    .option('--password <password>', 'the password (or use --invite)')
    .option('--invite', 'e-mail a code with which the user chooses a password')
    .option('--verified', 'the address counts as confirmed')
    .option('--name <name>', 'display name')
    .action(async (address: string, o: Scope & { password?: string; invite?: boolean; verified?: boolean; name?: string }) => {
      const email = emailSchema.safeParse(address);
      if (!email.success) throw new CliError(`not an e-mail address: ${address}`);
      await withUsers(o, async (svc, env) => {
        const input = { email: email.data, password: o.password, invite: o.invite, emailVerified: o.verified, name: o.name };
        print(await svc.create(env, input, ORIGIN));
      });
    });

  for (const [name, disabled, what] of [
    ['disable', true, 'disable a user: no login, sessions ended, access tokens refused at once'],
    ['enable', false, 'enable a disabled user again'],
  ] as const) {
    scoped(users.command(`${name} <user>`).description(what)).action(async (who: string, o: Scope) => {
      await withUsers(o, async (svc, env) => {
        const id = await resolveUser(svc, env, who);
        const { user } = await svc.update(env, id, { disabled }, ORIGIN);
        console.log(`${user.email} is ${user.status}`);
      });
    });
  }

  scoped(users.command('delete <user>').description('delete a user and everything of theirs'))
    .option('--yes', 'confirm the deletion')
    .action(async (who: string, o: Scope & { yes?: boolean }) => {
      if (!o.yes) throw new CliError('deleting a user cannot be undone: add --yes to confirm');
      await withUsers(o, async (svc, env) => {
        const id = await resolveUser(svc, env, who);
        await svc.delete(env, id, ORIGIN);
        console.log(`deleted user ${id}`);
      });
    });

  scoped(
    users.command('logout [user]').description('end every session of a user at once (force logout): their tokens are refused from now on'),
  )
    .option('--email <email>', "the user's e-mail address")
    .action(async (who: string | undefined, o: Scope & { email?: string }) => {
      const target = who ?? o.email;
      if (!target) throw new CliError('name the user (an id or an e-mail address)');
      await withUsers(o, async (svc, env) => {
        const id = await resolveUser(svc, env, target);
        const { sessionsEnded: n } = await svc.logout(env, id, ORIGIN);
        console.log(`ended ${n} session${n === 1 ? '' : 's'} of ${target} in ${o.project}/${o.environment}`);
      });
    });
}
