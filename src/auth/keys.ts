import { calculateJwkThumbprint, exportJWK, exportPKCS8, generateKeyPair, type JWK } from 'jose';
import type { SecretBox } from '../core/crypto/secretbox.js';
import { selectList } from '../core/db/columns.js';
import { withTransaction, type Pool, type Queryable } from '../core/db/pool.js';
import type { Environment, SigningAlg } from '../projects/environments.js';

// Signing keys per environment, in three states: `next` is published but does not sign yet, so
// verifiers have it cached before the first token it signs; `active` signs; `retired` is still
// published until every token it signed has expired (publish_until).

export const SIGNING_KEY_PURPOSE = 'signing-key';

/** After a rotation, how long beyond the access-token lifetime a retired key stays published. */
const RETIRED_SLACK_SECONDS = 300;

export type KeyState = 'next' | 'active' | 'retired';

export interface SigningKeyRecord {
  kid: string;
  alg: SigningAlg;
  publicJwk: JWK;
  privateKey: Buffer;
  state: KeyState;
  createdAt: Date;
  activatedAt: Date | null;
  retiredAt: Date | null;
  publishUntil: Date | null;
}

const COLUMNS = selectList<SigningKeyRecord>({
  kid: 'kid',
  alg: 'alg',
  publicJwk: 'public_jwk',
  privateKey: 'private_key',
  state: 'state',
  createdAt: 'created_at',
  activatedAt: 'activated_at',
  retiredAt: 'retired_at',
  publishUntil: 'publish_until',
});

async function newKey(alg: SigningAlg): Promise<{ kid: string; publicJwk: JWK; pkcs8: string }> {
  const { publicKey, privateKey } = await generateKeyPair(alg, { extractable: true, ...(alg === 'EdDSA' ? { crv: 'Ed25519' } : {}) });
  const jwk = await exportJWK(publicKey);
  // The RFC 7638 thumbprint: a kid that names the key itself, and never collides by accident.
  const kid = await calculateJwkThumbprint(jwk);
  return { kid, publicJwk: { ...jwk, kid, alg, use: 'sig' }, pkcs8: await exportPKCS8(privateKey) };
}

async function insertKey(db: Queryable, secrets: SecretBox, env: Environment, state: KeyState, now: Date): Promise<void> {
  const key = await newKey(env.signingAlg);
  await db.query(
    `INSERT INTO walgate.signing_keys (kid, project_id, environment, alg, public_jwk, private_key, state, created_at, activated_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
    [
      key.kid,
      env.projectId,
      env.name,
      env.signingAlg,
      JSON.stringify(key.publicJwk),
      secrets.seal(key.pkcs8, SIGNING_KEY_PURPOSE),
      state,
      now,
      state === 'active' ? now : null,
    ],
  );
}

/** The keys of a new environment: one that signs, and the next one, published ahead. */
export async function createInitialSigningKeys(db: Queryable, secrets: SecretBox, env: Environment, now: Date): Promise<void> {
  await insertKey(db, secrets, env, 'active', now);
  await insertKey(db, secrets, env, 'next', now);
}

export async function listSigningKeys(db: Queryable, projectId: string, environment: string): Promise<SigningKeyRecord[]> {
  const { rows } = await db.query<SigningKeyRecord>(
    `SELECT ${COLUMNS} FROM walgate.signing_keys WHERE project_id = $1 AND environment = $2
      ORDER BY CASE state WHEN 'next' THEN 0 WHEN 'active' THEN 1 ELSE 2 END, created_at DESC`,
    [projectId, environment],
  );
  return rows;
}

/** The keys a verifier may meet: next, active, and retired ones still within their window. */
export async function liveSigningKeys(db: Queryable, projectId: string, environment: string, now: Date): Promise<SigningKeyRecord[]> {
  return (await listSigningKeys(db, projectId, environment)).filter(
    (k) => k.state !== 'retired' || (k.publishUntil !== null && k.publishUntil > now),
  );
}

/**
 * Rotation: the published `next` key starts signing, the active one retires (published until the
 * last token it signed has expired), and a new `next` is published. One transaction, with the
 * environment row locked, so two rotations cannot interleave. The new keys use the environment's
 * current algorithm, so a change of algorithm takes effect through a rotation.
 */
export async function rotateSigningKeys(
  pool: Pool,
  secrets: SecretBox,
  env: Environment,
  now: Date,
): Promise<{ active: string; next: string; retired: string | null }> {
  return withTransaction(pool, async (c) => {
    const { rows: envRows } = await c.query('SELECT signing_alg FROM walgate.environments WHERE project_id = $1 AND name = $2 FOR UPDATE', [
      env.projectId,
      env.name,
    ]);
    const current: Environment = { ...env, signingAlg: envRows[0]?.signing_alg ?? env.signingAlg };
    const publishUntil = new Date(now.getTime() + (env.accessTokenTtlSeconds + RETIRED_SLACK_SECONDS) * 1000);
    const retired = await c.query<{ kid: string }>(
      `UPDATE walgate.signing_keys SET state = 'retired', retired_at = $3, publish_until = $4
        WHERE project_id = $1 AND environment = $2 AND state = 'active' RETURNING kid`,
      [env.projectId, env.name, now, publishUntil],
    );
    const promoted = await c.query(
      `UPDATE walgate.signing_keys SET state = 'active', activated_at = $3
        WHERE project_id = $1 AND environment = $2 AND state = 'next'`,
      [env.projectId, env.name, now],
    );
    if (!promoted.rowCount) await insertKey(c, secrets, current, 'active', now);
    await insertKey(c, secrets, current, 'next', now);
    // Retired keys past their window are of no use to anyone.
    await c.query(
      `DELETE FROM walgate.signing_keys WHERE project_id = $1 AND environment = $2 AND state = 'retired' AND publish_until <= $3`,
      [env.projectId, env.name, now],
    );
    const keys = await listSigningKeys(c, env.projectId, env.name);
    return {
      active: keys.find((k) => k.state === 'active')!.kid,
      next: keys.find((k) => k.state === 'next')!.kid,
      retired: retired.rows[0]?.kid ?? null,
    };
  });
}
