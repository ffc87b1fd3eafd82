import type { Command } from 'commander';
import type { z } from 'zod';
import type { Context } from '../core/context.js';
import { CREDENTIAL_NAMES } from '../delivery/destinations/credentials.js';
import { findEnvironment, type Environment } from '../projects/environments.js';
import { createDestinationBody, updateDestinationBody } from '../webhooks/destinations/schemas.js';
import { DestinationService } from '../webhooks/destinations/service.js';
import { findDestination, listDestinations, subscriptionsUsing } from '../webhooks/destinations/store.js';
import { destinationView } from '../webhooks/destinations/view.js';
import { asCommand, CliError, table, withCliContext } from './runtime.js';

// `walgate destinations …`: the twins of /api/rest/_destinations (docs/destinations.md), through
// the same service and the same body schemas, so a command refuses what the API refuses, with its
// message. A password or token comes from an option or from standard input (`--password-stdin`,
// `--token-stdin`: not in the shell's history or the process list); it is never printed — the
// answers show which credentials are set, as the API's do.

interface Scope {
  project: string;
  environment: string;
}

interface CredentialOptions {
  username?: string;
  password?: string;
  passwordStdin?: boolean;
  token?: string;
  tokenStdin?: boolean;
}

async function withDestinations<T>(o: Scope, fn: (svc: DestinationService, env: Environment, ctx: Context) => Promise<T>): Promise<T> {
  return withCliContext(async (ctx) => {
    const env = await findEnvironment(ctx.pool, o.project, o.environment);
    if (!env) throw new CliError(`no environment ${o.environment} in project ${o.project}`);
    return asCommand(() => fn(new DestinationService(ctx), env, ctx));
  });
}

/** A body checked by the API's own schema; a refusal reads as the API's violations. */
function parsed<S extends z.ZodType>(schema: S, body: unknown): z.output<S> {
  const result = schema.safeParse(body);
  if (result.success) return result.data;
  throw new CliError(result.error.issues.map((i) => `${i.path.join('.') || 'body'} ${i.message}`).join('; '));
}

/** A destination named by its id (dst_…) or its name, as its id. */
async function destinationId(ctx: Context, env: Environment, which: string): Promise<string> {
  const found = await findDestination(ctx.pool, env.projectId, env.name, which.startsWith('dst_') ? { id: which } : { name: which });
  if (!found) throw new CliError(`no destination ${which} in ${env.projectId}/${env.name}`);
  return found.id;
}

async function readStdin(): Promise<string> {
  if (process.stdin.isTTY) process.stderr.write('reading the secret from standard input (end with Ctrl-D)\n');
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  // One trailing newline is the terminal's (or echo's), not the secret's.
  return Buffer.concat(chunks)
    .toString('utf8')
    .replace(/\r?\n$/, '');
}

/** The password and token the options give, read from standard input where they ask for it. */
async function secrets(o: CredentialOptions): Promise<{ password?: string; token?: string }> {
  if (o.passwordStdin && o.tokenStdin)
    throw new CliError('only one of --password-stdin and --token-stdin: standard input holds one secret');
  if (o.passwordStdin && o.password !== undefined) throw new CliError('give --password or --password-stdin, not both');
  if (o.tokenStdin && o.token !== undefined) throw new CliError('give --token or --token-stdin, not both');
  const password = o.passwordStdin ? await readStdin() : o.password;
  const token = o.tokenStdin ? await readStdin() : o.token;
  return { ...(password === undefined ? {} : { password }), ...(token === undefined ? {} : { token }) };
}

function scoped(cmd: Command): Command {
  return cmd.requiredOption('--project <projectId>', 'project').option('--environment <name>', 'environment name', 'master');
}

function credentialOptions(cmd: Command): Command {
  return cmd
    .option('--username <name>', 'the user name the broker knows')
    .option('--password <password>', 'its password (prefer --password-stdin)')
    .option('--password-stdin', 'read the password from standard input')
    .option('--token <token>', 'a NATS authentication token, nats only (prefer --token-stdin)')
    .option('--token-stdin', 'read the NATS token from standard input');
}

const print = (value: unknown) => console.log(JSON.stringify(value, null, 2));

export function registerDestinationCommands(program: Command): void {
  const destinations = program
    .command('destinations')
    .description('broker destinations (NATS JetStream, RabbitMQ) of an environment, as /api/rest/_destinations manages them');

  scoped(
    destinations
      .command('list')
      .description("an environment's destinations, which credentials are set (never their values) and how many subscriptions use each"),
  ).action(async (o: Scope) => {
    await withDestinations(o, async (_svc, env, ctx) => {
      const rows = [];
      for (const d of await listDestinations(ctx.pool, env.projectId, env.name, 1000)) {
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

  scoped(
    destinations.command('show <destination>').description('a destination (id or name) and the ids of the subscriptions that use it'),
  ).action(async (which: string, o: Scope) => {
    await withDestinations(o, async (svc, env, ctx) => print(await svc.get(env, await destinationId(ctx, env, which))));
  });

  credentialOptions(
    scoped(
      destinations.command('create <name>').description('create a destination; prints it (which credentials are set, never their values)'),
    ),
  )
    .requiredOption('--kind <kind>', 'nats or rabbitmq')
    .requiredOption('--url <url>', 'nats://host:4222, or amqp://host:5672/vhost (amqps://…); no credentials in it')
    .action(async (name: string, o: Scope & CredentialOptions & { kind: string; url: string }) => {
      const given = await secrets(o);
      await withDestinations(o, async (svc, env) => {
        const body = parsed(createDestinationBody, {
          projectId: env.projectId,
          environment: env.name,
          name,
          kind: o.kind,
          url: o.url,
          ...(o.username === undefined ? {} : { username: o.username }),
          ...given,
        });
        print({ destination: await svc.create(env, body) });
      });
    });

  credentialOptions(
    scoped(destinations.command('update <destination>').description('change the URL or credentials of a destination (id or name)')),
  )
    .option('--url <url>', 'a new URL')
    .option('--clear <credential...>', 'remove credentials: username, password, token')
    .action(async (which: string, o: Scope & CredentialOptions & { url?: string; clear?: string[] }) => {
      for (const c of o.clear ?? []) {
        if (!(CREDENTIAL_NAMES as readonly string[]).includes(c)) throw new CliError(`--clear takes username, password or token, not ${c}`);
      }
      const given = await secrets(o);
      const changes: Record<string, string | null> = {
        ...Object.fromEntries((o.clear ?? []).map((c) => [c, null])),
        ...(o.url === undefined ? {} : { url: o.url }),
        ...(o.username === undefined ? {} : { username: o.username }),
        ...given,
      };
      if (Object.keys(changes).length === 0) throw new CliError('nothing to change: give --url, a credential or --clear');
      await withDestinations(o, async (svc, env, ctx) => {
        const id = await destinationId(ctx, env, which);
        print({ destination: await svc.update(env, id, parsed(updateDestinationBody, changes)) });
      });
    });

  scoped(
    destinations
      .command('delete <destination>')
      .description('delete a destination (id or name); refused while a subscription delivers to it'),
  ).action(async (which: string, o: Scope) => {
    await withDestinations(o, async (svc, env, ctx) => {
      const id = await destinationId(ctx, env, which);
      await svc.delete(env, id);
      console.log(`deleted destination ${id}`);
    });
  });
}
