import { createInitialSigningKeys } from './keys.js';
import { publishCacheEvent } from '../core/cache-events.js';
import type { Context } from '../core/context.js';
import { withTransaction } from '../core/db/pool.js';
import { createEnvironment, type CreateEnvironmentInput, type Environment } from '../projects/environments.js';

/** A new project environment, ready to serve: settings, data schema and signing keys, in one transaction. */
export async function provisionEnvironment(
  ctx: Pick<Context, 'pool' | 'secrets' | 'clock'>,
  input: CreateEnvironmentInput,
): Promise<Environment> {
  return withTransaction(ctx.pool, async (client) => {
    const env = await createEnvironment(client, ctx.secrets, input);
    await createInitialSigningKeys(client, ctx.secrets, env, ctx.clock());
    // An api that was asked for it before may remember that it did not exist.
    await publishCacheEvent(client, { kind: 'environment', projectId: env.projectId, name: env.name });
    return env;
  });
}
