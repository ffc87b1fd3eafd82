import { importJWK, importPKCS8, type CryptoKey } from 'jose';
import type { Context } from '../core/context.js';
import { PgCode, pgCode, withTransaction } from '../core/db/pool.js';
import { JWE_KEY_PURPOSE, type Environment, type SigningAlg } from '../projects/environments.js';
import { createInitialSigningKeys, liveSigningKeys, SIGNING_KEY_PURPOSE, type SigningKeyRecord } from './keys.js';

interface EnvironmentKeys {
  loadedAt: number;
  signing: { kid: string; alg: SigningAlg; key: CryptoKey } | undefined;
  verifying: Map<string, { alg: SigningAlg; key: CryptoKey }>;
  published: SigningKeyRecord[];
}

/** After a miss on an unknown `kid`, how long before the keys are read again (a forged kid must not cost a query each). */
const UNKNOWN_KID_RELOAD_MS = 1000;

/**
 * The keys of each environment, imported once and kept for ctx.cacheTtlMs: signing and verifying
 * cost no query on the hot path. A rotation made by the CLI in another process is announced
 * (src/core/cache-events.ts) and forgotten at once, within the TTL otherwise; a token signed with a
 * key we have not seen yet triggers one early reload.
 */
export class KeyRing {
  readonly #cache = new Map<string, EnvironmentKeys>();
  readonly #loading = new Map<string, Promise<EnvironmentKeys>>();
  readonly #jwe = new Map<string, Uint8Array>();
  /** Bumped by forget/clear: a load that started before must not store what it read. */
  #generation = 0;

  constructor(private readonly ctx: Pick<Context, 'pool' | 'secrets' | 'clock' | 'cacheTtlMs'>) {}

  async signingKey(env: Environment): Promise<{ kid: string; alg: SigningAlg; key: CryptoKey }> {
    let keys = await this.#keys(env);
    if (!keys.signing) {
      // An environment created without keys (by hand, or before keys existed): make them now.
      await withTransaction(this.ctx.pool, (c) => createInitialSigningKeys(c, this.ctx.secrets, env, this.ctx.clock())).catch(
        (err: unknown) => {
          if (pgCode(err) !== PgCode.uniqueViolation) throw err; // another instance made them first
        },
      );
      keys = await this.#keys(env, true);
    }
    if (!keys.signing) throw new Error(`no signing key for ${env.projectId}/${env.name}`);
    return keys.signing;
  }

  async verificationKey(env: Environment, kid: string): Promise<{ alg: SigningAlg; key: CryptoKey } | undefined> {
    const keys = await this.#keys(env);
    const found = keys.verifying.get(kid);
    if (found || Date.now() - keys.loadedAt < UNKNOWN_KID_RELOAD_MS) return found;
    return (await this.#keys(env, true)).verifying.get(kid);
  }

  async publishedKeys(env: Environment): Promise<SigningKeyRecord[]> {
    return (await this.#keys(env)).published;
  }

  forget(projectId: string, name: string): void {
    const id = `${projectId}\0${name}`;
    this.#generation++;
    this.#cache.delete(id);
    this.#loading.delete(id);
  }

  clear(): void {
    this.#generation++;
    this.#cache.clear();
    this.#loading.clear();
  }

  /** The environment's `dir` key for JWE access tokens (never published). */
  jweKey(env: Environment): Uint8Array {
    const id = `${env.projectId}\0${env.name}`;
    let key = this.#jwe.get(id);
    if (!key) {
      if (!env.jweKey) throw new Error(`environment ${env.projectId}/${env.name} has no JWE key`);
      key = new Uint8Array(this.ctx.secrets.open(env.jweKey, JWE_KEY_PURPOSE));
      this.#jwe.set(id, key);
    }
    return key;
  }

  async #keys(env: Environment, force = false): Promise<EnvironmentKeys> {
    const id = `${env.projectId}\0${env.name}`;
    const cached = this.#cache.get(id);
    if (!force && cached && Date.now() - cached.loadedAt < this.ctx.cacheTtlMs) return cached;
    let loading = this.#loading.get(id);
    if (!loading) {
      const generation = this.#generation;
      const load: Promise<EnvironmentKeys> = this.#load(env)
        .then((keys) => {
          if (generation === this.#generation) this.#cache.set(id, keys);
          return keys;
        })
        .finally(() => {
          if (this.#loading.get(id) === load) this.#loading.delete(id);
        });
      loading = load;
      this.#loading.set(id, loading);
    }
    return loading;
  }

  async #load(env: Environment): Promise<EnvironmentKeys> {
    const records = await liveSigningKeys(this.ctx.pool, env.projectId, env.name, this.ctx.clock());
    const verifying = new Map<string, { alg: SigningAlg; key: CryptoKey }>();
    let signing: EnvironmentKeys['signing'];
    for (const r of records) {
      verifying.set(r.kid, { alg: r.alg, key: (await importJWK(r.publicJwk, r.alg)) as CryptoKey });
      if (r.state === 'active') {
        const pem = this.ctx.secrets.open(r.privateKey, SIGNING_KEY_PURPOSE).toString('utf8');
        signing = { kid: r.kid, alg: r.alg, key: await importPKCS8(pem, r.alg) };
      }
    }
    return { loadedAt: Date.now(), signing, verifying, published: records };
  }
}
