import { randomBytes } from 'node:crypto';
import { TtlCache } from '../cache.js';
import { publishCacheEvent } from '../cache-events.js';
import type { SecretBox } from '../crypto/secretbox.js';
import { defaultSchemaName, isPlainIdentifier, quoteIdent } from '../db/identifiers.js';
import { PgCode, pgCode, type PoolClient, type Queryable } from '../db/pool.js';

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
}

export const JWE_KEY_PURPOSE = 'environment-jwe-key';
export const DEFAULT_ENVIRONMENT = 'master';
const NAME = /^[A-Za-z0-9][A-Za-z0-9_-]{0,62}$/;

export function isValidName(name: string): boolean {
  return NAME.test(name);
}

const COLUMNS = `project_id, name, schema_name, auth_enabled, token_format, signing_alg, jwe_key,
  access_token_ttl_seconds, refresh_token_ttl_seconds, code_ttl_seconds, code_max_attempts,
  lockout_threshold, lockout_seconds, created_at`;

function fromRow(r: Record<string, unknown>): Environment {
  return {
    projectId: r.project_id as string,
    name: r.name as string,
    schemaName: r.schema_name as string,
    authEnabled: r.auth_enabled as boolean,
    tokenFormat: r.token_format as TokenFormat,
    signingAlg: r.signing_alg as SigningAlg,
    jweKey: r.jwe_key as Buffer | null,
    accessTokenTtlSeconds: r.access_token_ttl_seconds as number,
    refreshTokenTtlSeconds: r.refresh_token_ttl_seconds as number,
    codeTtlSeconds: r.code_ttl_seconds as number,
    codeMaxAttempts: r.code_max_attempts as number,
    lockoutThreshold: r.lockout_threshold as number,
    lockoutSeconds: r.lockout_seconds as number,
    createdAt: r.created_at as Date,
  };
}

export async function findEnvironment(db: Queryable, projectId: string, name: string): Promise<Environment | undefined> {
  const { rows } = await db.query(`SELECT ${COLUMNS} FROM walgate.environments WHERE project_id = $1 AND name = $2`, [
    projectId,
    name,
  ]);
  return rows[0] ? fromRow(rows[0]) : undefined;
}

export async function listEnvironments(db: Queryable, projectId?: string): Promise<Environment[]> {
  const { rows } = await db.query(
    `SELECT ${COLUMNS} FROM walgate.environments WHERE $1::text IS NULL OR project_id = $1 ORDER BY project_id, name`,
    [projectId ?? null],
  );
  return rows.map(fromRow);
}

export interface EnvironmentSettings {
  authEnabled?: boolean;
  tokenFormat?: TokenFormat;
  signingAlg?: SigningAlg;
  accessTokenTtlSeconds?: number;
  refreshTokenTtlSeconds?: number;
  codeTtlSeconds?: number;
  codeMaxAttempts?: number;
  lockoutThreshold?: number;
  lockoutSeconds?: number;
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
export async function createEnvironment(
  client: PoolClient,
  secrets: SecretBox,
  input: CreateEnvironmentInput,
): Promise<Environment> {
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
  const { rows } = await insertOrTaken(client, schemaName, () => client.query(
    `INSERT INTO walgate.environments (project_id, name, schema_name, jwe_key, auth_enabled, token_format, signing_alg,
       access_token_ttl_seconds, refresh_token_ttl_seconds, code_ttl_seconds, code_max_attempts, lockout_threshold, lockout_seconds)
     VALUES ($1, $2, $3, $4, coalesce($5, true), coalesce($6, 'jws'), coalesce($7, 'ES256'),
       coalesce($8, 900), coalesce($9, 2592000), coalesce($10, 600), coalesce($11, 5), coalesce($12, 5), coalesce($13, 900))
     RETURNING ${COLUMNS}`,
    [
      input.projectId,
      input.name,
      schemaName,
      jweKey,
      input.authEnabled ?? null,
      input.tokenFormat ?? null,
      input.signingAlg ?? null,
      input.accessTokenTtlSeconds ?? null,
      input.refreshTokenTtlSeconds ?? null,
      input.codeTtlSeconds ?? null,
      input.codeMaxAttempts ?? null,
      input.lockoutThreshold ?? null,
      input.lockoutSeconds ?? null,
    ],
  ));
  return fromRow(rows[0]!);
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

/** Changes settings of an existing environment; returns undefined when there is no such environment. */
export async function updateEnvironment(
  db: Queryable,
  projectId: string,
  name: string,
  settings: EnvironmentSettings,
): Promise<Environment | undefined> {
  const { rows } = await db.query(
    `UPDATE walgate.environments SET
       auth_enabled = coalesce($3, auth_enabled),
       token_format = coalesce($4, token_format),
       signing_alg = coalesce($5, signing_alg),
       access_token_ttl_seconds = coalesce($6, access_token_ttl_seconds),
       refresh_token_ttl_seconds = coalesce($7, refresh_token_ttl_seconds),
       code_ttl_seconds = coalesce($8, code_ttl_seconds),
       code_max_attempts = coalesce($9, code_max_attempts),
       lockout_threshold = coalesce($10, lockout_threshold),
       lockout_seconds = coalesce($11, lockout_seconds),
       updated_at = now()
     WHERE project_id = $1 AND name = $2
     RETURNING ${COLUMNS}`,
    [
      projectId,
      name,
      settings.authEnabled ?? null,
      settings.tokenFormat ?? null,
      settings.signingAlg ?? null,
      settings.accessTokenTtlSeconds ?? null,
      settings.refreshTokenTtlSeconds ?? null,
      settings.codeTtlSeconds ?? null,
      settings.codeMaxAttempts ?? null,
      settings.lockoutThreshold ?? null,
      settings.lockoutSeconds ?? null,
    ],
  );
  if (!rows[0]) return undefined;
  await publishCacheEvent(db, { kind: 'environment', projectId, name });
  return fromRow(rows[0]);
}

/**
 * A short-lived in-memory view of environments, so the hot path (every auth request) does not
 * pay a query for settings. Changes made by the CLI in another process are announced
 * (src/cache-events.ts) and dropped at once; the TTL bounds them when no announcement arrives.
 */
export class EnvironmentCache {
  readonly #cache: TtlCache<string, Environment | undefined>;

  constructor(
    private readonly db: Queryable,
    ttlMs: number,
  ) {
    this.#cache = new TtlCache(ttlMs);
  }

  get(projectId: string, name: string): Promise<Environment | undefined> {
    return this.#cache.get(`${projectId}\0${name}`, () => findEnvironment(this.db, projectId, name));
  }

  forget(projectId: string, name: string): void {
    this.#cache.delete(`${projectId}\0${name}`);
  }

  clear(): void {
    this.#cache.clear();
  }
}
