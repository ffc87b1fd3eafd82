import type { Context } from '../../core/context.js';
import { randomId } from '../../core/crypto/tokens.js';
import { PgCode, pgCode, withTransaction } from '../../core/db/pool.js';
import { AppError, validationError, type Violation } from '../../core/errors.js';
import { CREDENTIAL_NAMES, openCredentials, sealCredentials, type Credentials } from '../../delivery/destinations/credentials.js';
import type { Environment } from '../../projects/environments.js';
import type { CreateDestinationBody, UpdateDestinationBody } from './schemas.js';
import * as store from './store.js';
import { brokerUrlViolations, credentialViolations } from './validation.js';
import { destinationView, type DestinationView } from './view.js';

// The rules of broker destinations (docs/destinations.md): per environment, named, with sealed
// credentials; one that subscriptions deliver to cannot be deleted.

export class DestinationService {
  constructor(private readonly ctx: Context) {}

  async create(env: Environment, body: CreateDestinationBody): Promise<DestinationView> {
    const credentials: Credentials = { username: body.username, password: body.password, token: body.token };
    const violations = [
      ...echoViolations(env, body),
      ...credentialViolations(body.kind, definedOnly(credentials)),
      ...(await this.#urlViolations(body.kind, body.url)),
    ];
    if (violations.length) throw validationError(violations);
    const now = this.ctx.clock();
    const { sealed, names } = sealCredentials(this.ctx.secrets, definedOnly(credentials));
    const row = await store.insertDestination(this.ctx.pool, {
      id: randomId('dst_'),
      projectId: env.projectId,
      environment: env.name,
      name: body.name,
      kind: body.kind,
      url: body.url,
      credentials: sealed,
      credentialNames: names,
      createdAt: now,
      updatedAt: now,
    });
    if (!row)
      throw validationError([{ path: 'name', message: `a destination named ${JSON.stringify(body.name)} exists in this environment` }]);
    return destinationView(row);
  }

  async list(env: Environment, limit: number): Promise<{ destinations: DestinationView[] }> {
    return { destinations: (await store.listDestinations(this.ctx.pool, env.projectId, env.name, limit)).map(destinationView) };
  }

  async get(env: Environment, id: string): Promise<{ destination: DestinationView; subscriptions: string[] }> {
    const row = await this.#find(env, id);
    return { destination: destinationView(row), subscriptions: await store.subscriptionsUsing(this.ctx.pool, row.id) };
  }

  async update(env: Environment, id: string, body: UpdateDestinationBody): Promise<DestinationView> {
    const found = await this.#find(env, id);
    const urlProblems = body.url === undefined ? [] : await this.#urlViolations(found.kind, body.url);
    const row = await withTransaction(this.ctx.pool, async (c) => {
      const locked = await store.findDestination(c, env.projectId, env.name, { id }, true);
      if (!locked) throw new AppError('DESTINATION_NOT_FOUND');
      // Absent keeps a credential, null clears it, a value replaces it.
      const credentials = openCredentials(this.ctx.secrets, locked.credentials);
      for (const name of CREDENTIAL_NAMES) {
        const given = body[name];
        if (given === null) delete credentials[name];
        else if (given !== undefined) credentials[name] = given;
      }
      const violations = [...echoViolations(env, body), ...urlProblems, ...credentialViolations(locked.kind, credentials)];
      if (violations.length) throw validationError(violations);
      const { sealed, names } = sealCredentials(this.ctx.secrets, credentials);
      return store.updateDestination(c, {
        ...locked,
        url: body.url ?? locked.url,
        credentials: sealed,
        credentialNames: names,
        updatedAt: this.ctx.clock(),
      });
    });
    return destinationView(row);
  }

  async delete(env: Environment, id: string): Promise<void> {
    try {
      await withTransaction(this.ctx.pool, async (c) => {
        const locked = id.length <= 128 ? await store.findDestination(c, env.projectId, env.name, { id }, true) : undefined;
        if (!locked) throw new AppError('DESTINATION_NOT_FOUND');
        const using = await store.subscriptionsUsing(c, locked.id);
        if (using.length) throw inUse(using);
        await store.deleteDestination(c, locked.id);
      });
    } catch (err) {
      // A subscription created meanwhile (its insert did not wait for this row's lock): the foreign key refuses.
      if (pgCode(err) === PgCode.foreignKeyViolation) throw inUse(await store.subscriptionsUsing(this.ctx.pool, id));
      throw err;
    }
  }

  async #find(env: Environment, id: string): Promise<store.DestinationRow> {
    const row = id.length <= 128 ? await store.findDestination(this.ctx.pool, env.projectId, env.name, { id }) : undefined;
    if (!row) throw new AppError('DESTINATION_NOT_FOUND');
    return row;
  }

  #urlViolations(kind: store.DestinationRow['kind'], url: string): Promise<Violation[]> {
    return brokerUrlViolations(kind, url, this.ctx.config.webhooks.allowPrivateNetworks, this.ctx.lookup);
  }
}

function inUse(subscriptions: string[]): AppError {
  return new AppError(
    'DESTINATION_IN_USE',
    `Subscriptions deliver to this destination (${subscriptions.join(', ')}): delete them or move them to another first.`,
    { subscriptions },
  );
}

function echoViolations(env: Environment, body: { projectId?: string; environment?: string }): Violation[] {
  const violations: Violation[] = [];
  if (body.projectId !== undefined && body.projectId !== env.projectId) {
    violations.push({ path: 'projectId', message: `must equal the X-Project-ID header (${env.projectId})` });
  }
  if (body.environment !== undefined && body.environment !== env.name) {
    violations.push({ path: 'environment', message: `must equal the environment header (${env.name})` });
  }
  return violations;
}

function definedOnly(c: Credentials): Credentials {
  return Object.fromEntries(Object.entries(c).filter(([, v]) => v !== undefined)) as Credentials;
}
