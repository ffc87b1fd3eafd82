import { randomBytes } from 'node:crypto';
import { TtlCache } from '../core/cache.js';
import type { SecretBox } from '../core/crypto/secretbox.js';
import { defaultSchemaName, isPlainIdentifier, quoteIdent } from '../core/db/identifiers.js';
import { selectList } from '../core/db/columns.js';
import { PgCode, pgCode, withTransaction, type Pool, type PoolClient, type Queryable } from '../core/db/pool.js';
import { publishCacheEvent } from '../core/cache-events.js';
import { applyPatch, COLUMN_SETTINGS, documentPart, environmentSettings, type Settings, type SettingsPatch } from './settings.js';
import { sealProviders } from './providers.js';

export type TokenFormat = 'jws' | 'jwe';
export type SigningAlg = 'ES256' | 'RS256' | 'EdDSA';

export interface Environment {
  projectId: string;
  name: string;
  schemaName: string;
  authEnabled: boolean;
  tokenFormat: TokenFormat;
  signingAlg: SigningAlg;
  /** Sealed `dir` A256GCM key for JWE access tokens. */
  jweKey: Buffer | null;
  accessTokenTtlSeconds: number;
  refreshTokenTtlSeconds: number;
  codeTtlSeconds: number;
  codeMaxAttempts: number;
  lockoutThreshold: number;
  lockoutSeconds: number;
  createdAt: Date;
  /** Every setting, typed columns and the JSON document together, defaults filled in (settings.ts). */
  settings: Settings;
}

type EnvironmentRow = Omit<Environment, 'settings'> & { document: Record<string, unknown> };

export const JWE_KEY_PURPOSE = 'environment-jwe-key';
export const DEFAULT_ENVIRONMENT = 'master';
/** What a project id or an environment name may be (the tables' CHECK constraints say the same). */
export const TENANT_NAME = /^[A-Za-z0-9][A-Za-z0-9_-]{0,62}$/;
export const TENANT_NAME_RULE = 'must be 1-63 letters, digits, `_` or `-`';

export function isValidName(name: string): boolean {
  return TENANT_NAME.test(name);
}

const COLUMNS = selectList<EnvironmentRow>({
  projectId: 'project_id',
  name: 'name',
  schemaName: 'schema_name',
  jweKey: 'jwe_key',
  ...COLUMN_SETTINGS,
  createdAt: 'created_at',
  document: 'settings',
});

function toEnvironment(row: EnvironmentRow): Environment {
  const { document, ...env } = row;
  const columns = Object.fromEntries(Object.keys(COLUMN_SETTINGS).map((k) => [k, env[k as keyof typeof COLUMN_SETTINGS]]));
  return { ...env, settings: environmentSettings.parse({ ...document, ...columns }) };
}

export async function findEnvironment(db: Queryable, projectId: string, name: string): Promise<Environment | undefined> {
  const { rows } = await db.query<EnvironmentRow>(`SELECT ${COLUMNS} FROM walgate.environments WHERE project_id = $1 AND name = $2`, [
    projectId,
    name,
  ]);
  return rows[0] && toEnvironment(rows[0]);
}

export async function listEnvironments(db: Queryable, projectId?: string): Promise<Environment[]> {
  const { rows } = await db.query<EnvironmentRow>(
    `SELECT ${COLUMNS} FROM walgate.environments WHERE $1::text IS NULL OR project_id = $1 ORDER BY project_id, name`,
    [projectId ?? null],
  );
  return rows.map(toEnvironment);
}

/** The settings an environment may be created with (the rest start at their defaults). */
export type EnvironmentSettings = Partial<Pick<Settings, keyof typeof COLUMN_SETTINGS>>;

/** The settings given, as [column, value] pairs (an omitted setting keeps its default or its value). */
function givenSettings(settings: EnvironmentSettings): [string, unknown][] {
  return Object.entries(COLUMN_SETTINGS).flatMap(([key, column]) => {
    const value = settings[key as keyof EnvironmentSettings];
    return value === undefined ? [] : [[column, value] as [string, unknown]];
  });
}

export interface CreateEnvironmentInput extends EnvironmentSettings {
  projectId: string;
  name: string;
  schemaName?: string;
}

export class EnvironmentExistsError extends Error {
  override name = 'EnvironmentExistsError';
}

/** The data schema asked for already belongs to another environment (names compared as Postgres folds them). */
export class SchemaTakenError extends Error {
  override name = 'SchemaTakenError';
  constructor(
    readonly schemaName: string,
    readonly owner: { projectId: string; name: string },
  ) {
    super(`schema ${schemaName} already belongs to ${owner.projectId}/${owner.name}; give this environment its own with --schema <name>`);
  }
}

async function schemaOwner(db: Queryable, schemaName: string): Promise<{ projectId: string; name: string } | undefined> {
  const { rows } = await db.query('SELECT project_id, name FROM walgate.environments WHERE lower(schema_name) = lower($1)', [schemaName]);
  return rows[0] ? { projectId: rows[0].project_id as string, name: rows[0].name as string } : undefined;
}

/**
 * Creates the project (when new) and one environment with its data schema (created when missing;
 * an existing schema, `public` included, may be named, unless another environment has it: the
 * unique index environments_schema_name_key decides, also between concurrent creations). Runs
 * inside the caller's transaction.
 */
export async function createEnvironment(client: PoolClient, secrets: SecretBox, input: CreateEnvironmentInput): Promise<Environment> {
  if (!isValidName(input.projectId)) throw new Error(`invalid project id ${JSON.stringify(input.projectId)}`);
  if (!isValidName(input.name)) throw new Error(`invalid environment name ${JSON.stringify(input.name)}`);
  const schemaName = input.schemaName ?? defaultSchemaName(input.projectId, input.name);
  if (!isPlainIdentifier(schemaName) || schemaName === 'walgate' || schemaName.startsWith('pg_')) {
    throw new Error(`invalid schema name ${JSON.stringify(schemaName)}`);
  }
  await client.query('INSERT INTO walgate.projects (id) VALUES ($1) ON CONFLICT DO NOTHING', [input.projectId]);
  if (await findEnvironment(client, input.projectId, input.name)) {
    throw new EnvironmentExistsError(`environment ${input.projectId}/${input.name} already exists`);
  }
  const owner = await schemaOwner(client, schemaName);
  if (owner) throw new SchemaTakenError(schemaName, owner);
  await client.query(`CREATE SCHEMA IF NOT EXISTS ${quoteIdent(schemaName)}`);
  const jweKey = secrets.seal(randomBytes(32), JWE_KEY_PURPOSE);
  const settings = givenSettings(input);
  const columns = ['project_id', 'name', 'schema_name', 'jwe_key', ...settings.map(([column]) => column)];
  const values = [input.projectId, input.name, schemaName, jweKey, ...settings.map(([, value]) => value)];
  const { rows } = await insertOrTaken(client, schemaName, () =>
    client.query<EnvironmentRow>(
      `INSERT INTO walgate.environments (${columns.join(', ')}) VALUES (${values.map((_, i) => `$${i + 1}`).join(', ')}) RETURNING ${COLUMNS}`,
      values,
    ),
  );
  return toEnvironment(rows[0]!);
}

/** A concurrent creation that took the schema between our check and our insert is the same refusal. */
async function insertOrTaken<T>(client: PoolClient, schemaName: string, insert: () => Promise<T>): Promise<T> {
  await client.query('SAVEPOINT environment_insert');
  try {
    return await insert();
  } catch (err) {
    if (pgCode(err) !== PgCode.uniqueViolation || (err as { constraint?: string }).constraint !== 'environments_schema_name_key') throw err;
    await client.query('ROLLBACK TO SAVEPOINT environment_insert');
    const owner = await schemaOwner(client, schemaName);
    throw owner ? new SchemaTakenError(schemaName, owner) : err;
  }
}

/**
 * Applies a change to an environment's settings (validated against the whole schema after the
 * merge) and announces it to every api process; undefined when there is no such environment.
 */
export async function updateEnvironment(
  pool: Pool,
  projectId: string,
  name: string,
  patch: SettingsPatch,
  /** Seals provider client secrets; needed when the change has `providers`. */
  secrets?: SecretBox,
): Promise<Environment | undefined> {
  return withTransaction(pool, async (c) => {
    const { rows: current } = await c.query<EnvironmentRow>(
      `SELECT ${COLUMNS} FROM walgate.environments WHERE project_id = $1 AND name = $2 FOR UPDATE`,
      [projectId, name],
    );
    if (!current[0]) return undefined;
    const before = toEnvironment(current[0]).settings;
    let sealed;
    if (patch.providers) {
      if (!secrets) throw new Error('updateEnvironment: provider secrets need the SecretBox');
      sealed = sealProviders(patch.providers, before.providers, { projectId, name }, secrets);
    }
    const next = applyPatch(before, { ...patch, providers: sealed });
    const columns = Object.entries(COLUMN_SETTINGS);
    const { rows } = await c.query<EnvironmentRow>(
      `UPDATE walgate.environments SET ${columns.map(([, column], i) => `${column} = $${i + 4}`).join(', ')}, settings = $3, updated_at = now()
        WHERE project_id = $1 AND name = $2
        RETURNING ${COLUMNS}`,
      [projectId, name, documentPart(next), ...columns.map(([key]) => next[key as keyof typeof COLUMN_SETTINGS])],
    );
    await publishCacheEvent(c, { kind: 'environment', projectId, name });
    return toEnvironment(rows[0]!);
  });
}

/**
 * A short-lived in-memory view of environments, so the hot path (every auth request) does not
 * pay a query for settings. Changes made by the CLI in another process are announced
 * (src/core/cache-events.ts) and dropped at once; the TTL bounds them when no announcement arrives.
 */
export class EnvironmentCache {
  readonly #cache: TtlCache<string, Environment | undefined>;
  readonly #origins: TtlCache<'', Set<string>>;

  constructor(
    private readonly db: Queryable,
    ttlMs: number,
  ) {
    this.#cache = new TtlCache(ttlMs);
    this.#origins = new TtlCache(ttlMs);
  }

  /** Every browser origin some environment allows (CORS preflights name no project). */
  originsInUse(): Promise<Set<string>> {
    return this.#origins.get('', async () => {
      const { rows } = await this.db.query<{ origin: string }>(
        `SELECT DISTINCT jsonb_array_elements_text(settings->'corsOrigins') AS origin FROM walgate.environments WHERE jsonb_typeof(settings->'corsOrigins') = 'array'`,
      );
      return new Set(rows.map((r) => r.origin));
    });
  }

  get(projectId: string, name: string): Promise<Environment | undefined> {
    return this.#cache.get(`${projectId}\0${name}`, () => findEnvironment(this.db, projectId, name));
  }

  forget(projectId: string, name: string): void {
    this.#cache.delete(`${projectId}\0${name}`);
    this.#origins.clear();
  }

  clear(): void {
    this.#cache.clear();
    this.#origins.clear();
  }
}
