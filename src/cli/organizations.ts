import type { Command } from 'commander';
import { OrganizationAdminService } from '../auth/organizations/admin.js';
import { email as emailSchema } from '../auth/schemas.js';
import { UserAdminService } from '../auth/users/service.js';
import { findEnvironment, type Environment } from '../projects/environments.js';
import { asCommand, CliError, table, withCliContext } from './runtime.js';

// `walgate organizations …`: the operator API's twins (/api/rest/_organizations). Each acts through
// the same service and appends the same audit rows (the actor is `cli`); a removal reaches every
// api's revocation list through the commit's notification.

interface Scope {
  project: string;
  environment: string;
}

const ORIGIN = { actor: 'cli' };
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

interface Tools {
  orgs: OrganizationAdminService;
  env: Environment;
  /** A user named by id or e-mail address. */
  user(who: string): Promise<string>;
}

async function withOrganizations<T>(o: Scope, fn: (tools: Tools) => Promise<T>): Promise<T> {
  return withCliContext(async (ctx) => {
    const env = await findEnvironment(ctx.pool, o.project, o.environment);
    if (!env) throw new CliError(`no environment ${o.project}/${o.environment}`);
    const users = new UserAdminService(ctx);
    const user = async (who: string) => {
      if (UUID.test(who)) return who;
      const email = emailSchema.safeParse(who);
      if (!email.success) throw new CliError(`not a user id or an e-mail address: ${who}`);
      const id = await users.idByEmail(env, email.data);
      if (!id) throw new CliError(`no user ${email.data} in ${env.projectId}/${env.name}`);
      return id;
    };
    return asCommand(() => fn({ orgs: new OrganizationAdminService(ctx), env, user }));
  });
}

function organizationId(id: string): string {
  if (!UUID.test(id)) throw new CliError(`not an organization id: ${id}`);
  return id;
}

function scoped(cmd: Command): Command {
  return cmd.requiredOption('--project <projectId>', 'project').option('--environment <name>', 'environment name', 'master');
}

const print = (value: unknown) => console.log(JSON.stringify(value, null, 2));

export function registerOrganizationCommands(program: Command): void {
  const orgs = program.command('organizations').description("end users' organizations, members and invitations");

  scoped(orgs.command('list').description('organizations, newest first'))
    .option('--json', 'print JSON')
    .action(async (o: Scope & { json?: boolean }) => {
      await withOrganizations(o, async ({ orgs: svc, env }) => {
        const page = await svc.list(env, {});
        if (o.json) print(page);
        else console.log(table(page.organizations, ['id', 'name', 'members', 'createdAt']));
      });
    });

  scoped(orgs.command('show <id>').description('an organization, its members and open invitations')).action(
    async (id: string, o: Scope) => {
      await withOrganizations(o, async ({ orgs: svc, env }) => print(await svc.get(env, organizationId(id))));
    },
  );

  scoped(orgs.command('create <name>').description('create an organization whose owner is a user (id or e-mail)'))
    .requiredOption('--owner <user>', 'the first owner')
    .action(async (name: string, o: Scope & { owner: string }) => {
      await withOrganizations(o, async ({ orgs: svc, env, user }) =>
        print(await svc.create(env, { name, ownerId: await user(o.owner) }, ORIGIN)),
      );
    });

  scoped(orgs.command('rename <id> <name>').description('rename an organization')).action(async (id: string, name: string, o: Scope) => {
    await withOrganizations(o, async ({ orgs: svc, env }) => print(await svc.rename(env, organizationId(id), { name }, ORIGIN)));
  });

  scoped(orgs.command('delete <id>').description("delete an organization (soft); members' tokens carrying it are refused"))
    .option('--yes', 'confirm the deletion')
    .action(async (id: string, o: Scope & { yes?: boolean }) => {
      if (!o.yes) throw new CliError('deleting an organization cannot be undone: add --yes to confirm');
      await withOrganizations(o, async ({ orgs: svc, env }) => {
        await svc.delete(env, organizationId(id), ORIGIN);
        console.log(`deleted organization ${id}`);
      });
    });

  scoped(orgs.command('add-member <id> <user>').description('add a user (id or e-mail) as a member, without an invitation'))
    .option('--role <role>', 'owner, admin, member or a role of the environment', 'member')
    .action(async (id: string, who: string, o: Scope & { role: string }) => {
      await withOrganizations(o, async ({ orgs: svc, env, user }) =>
        print(await svc.addMember(env, organizationId(id), { userId: await user(who), role: o.role }, ORIGIN)),
      );
    });

  scoped(orgs.command('set-role <id> <user> <role>').description("change a member's role (never the last owner's)")).action(
    async (id: string, who: string, role: string, o: Scope) => {
      await withOrganizations(o, async ({ orgs: svc, env, user }) =>
        print(await svc.changeRole(env, organizationId(id), await user(who), { role }, ORIGIN)),
      );
    },
  );

  scoped(
    orgs.command('remove-member <id> <user>').description('remove a member (never the last owner); their organization tokens are refused'),
  ).action(async (id: string, who: string, o: Scope) => {
    await withOrganizations(o, async ({ orgs: svc, env, user }) => {
      await svc.removeMember(env, organizationId(id), await user(who), ORIGIN);
      console.log(`removed ${who} from ${id}`);
    });
  });

  scoped(orgs.command('invite <id> <email>').description('e-mail an invitation'))
    .option('--role <role>', 'owner, admin, member or a role of the environment', 'member')
    .action(async (id: string, address: string, o: Scope & { role: string }) => {
      const email = emailSchema.safeParse(address);
      if (!email.success) throw new CliError(`not an e-mail address: ${address}`);
      await withOrganizations(o, async ({ orgs: svc, env }) =>
        print(await svc.invite(env, organizationId(id), { email: email.data, role: o.role }, ORIGIN)),
      );
    });

  scoped(orgs.command('revoke-invitation <id> <invitationId>').description('revoke an open invitation')).action(
    async (id: string, invitationId: string, o: Scope) => {
      if (!UUID.test(invitationId)) throw new CliError(`not an invitation id: ${invitationId}`);
      await withOrganizations(o, async ({ orgs: svc, env }) =>
        print(await svc.revokeInvitation(env, organizationId(id), invitationId, ORIGIN)),
      );
    },
  );
}
