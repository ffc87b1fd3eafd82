import type { Queryable } from '../../core/db/pool.js';

// Every statement on walgate.provider_flows (a sign-in on its way through the provider) and
// walgate.provider_grants (the one-time code the application exchanges). Both are looked up by
// the SHA-256 of a 256-bit random value, and both are single use: a statement takes the row and
// marks or deletes it at once, so two requests racing with one value cannot both win.

export interface Flow {
  projectId: string;
  environment: string;
  provider: string;
  redirectTo: string;
  codeChallenge: string;
  nonce: string;
  /** Sealed with KEY_ENCRYPTION_KEY (FLOW_VERIFIER_PURPOSE). */
  codeVerifier: Buffer;
}

export const FLOW_VERIFIER_PURPOSE = 'provider-flow-code-verifier';

export async function insertFlow(db: Queryable, stateHash: Buffer, flow: Flow, now: Date, expiresAt: Date): Promise<void> {
  // Flows abandoned at the provider are cleared by the next sign-in (cheap: the index on expiry).
  await db.query('DELETE FROM walgate.provider_flows WHERE expires_at < $1', [now]);
  await db.query(
    `INSERT INTO walgate.provider_flows (state_hash, project_id, environment, provider, redirect_to, code_challenge, nonce, code_verifier, created_at, expires_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
    [
      stateHash,
      flow.projectId,
      flow.environment,
      flow.provider,
      flow.redirectTo,
      flow.codeChallenge,
      flow.nonce,
      flow.codeVerifier,
      now,
      expiresAt,
    ],
  );
}

/** The flow of this state for this provider, removed as it is read; nothing when unknown, used or expired. */
export async function takeFlow(db: Queryable, stateHash: Buffer, provider: string, now: Date): Promise<Flow | undefined> {
  const { rows } = await db.query<Flow & { expiresAt: Date }>(
    `DELETE FROM walgate.provider_flows WHERE state_hash = $1 AND provider = $2
     RETURNING project_id AS "projectId", environment, provider, redirect_to AS "redirectTo", code_challenge AS "codeChallenge",
               nonce, code_verifier AS "codeVerifier", expires_at AS "expiresAt"`,
    [stateHash, provider],
  );
  const row = rows[0];
  if (!row || row.expiresAt.getTime() <= now.getTime()) return undefined;
  const { expiresAt: _, ...flow } = row;
  return flow;
}

export interface Grant {
  userId: string;
  provider: string;
  codeChallenge: string;
}

export async function insertGrant(
  db: Queryable,
  codeHash: Buffer,
  grant: Grant & { projectId: string; environment: string },
  now: Date,
  expiresAt: Date,
): Promise<void> {
  await db.query('DELETE FROM walgate.provider_grants WHERE expires_at < $1', [new Date(now.getTime() - 24 * 3600_000)]);
  await db.query(
    `INSERT INTO walgate.provider_grants (code_hash, user_id, project_id, environment, provider, code_challenge, created_at, expires_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
    [codeHash, grant.userId, grant.projectId, grant.environment, grant.provider, grant.codeChallenge, now, expiresAt],
  );
}

/**
 * Marks the code used and returns its grant, only when it is of this environment, unused and
 * unexpired. A used code stays (marked) until a day after it expired: a replay finds it used.
 */
export async function useGrant(
  db: Queryable,
  codeHash: Buffer,
  env: { projectId: string; name: string },
  now: Date,
): Promise<Grant | undefined> {
  const { rows } = await db.query<Grant>(
    `UPDATE walgate.provider_grants SET used_at = $4
      WHERE code_hash = $1 AND project_id = $2 AND environment = $3 AND used_at IS NULL AND expires_at > $4
      RETURNING user_id AS "userId", provider, code_challenge AS "codeChallenge"`,
    [codeHash, env.projectId, env.name, now],
  );
  return rows[0];
}
