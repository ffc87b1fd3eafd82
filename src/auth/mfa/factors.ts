import { selectList } from '../../core/db/columns.js';
import type { Queryable } from '../../core/db/pool.js';

// Every statement on walgate.mfa_factors: a user's TOTP secrets and passkeys.

export type FactorType = 'totp' | 'webauthn';

export interface Factor {
  id: string;
  userId: string;
  type: FactorType;
  status: 'pending' | 'active';
  name: string | null;
  /** Sealed (totp.ts TOTP_SECRET_PURPOSE); TOTP only. */
  totpSecret: Buffer | null;
  lastStep: string | null;
  credentialId: string | null;
  publicKey: Buffer | null;
  counter: string | null;
  transports: string[] | null;
  createdAt: Date;
  lastUsedAt: Date | null;
}

const COLUMNS = selectList<Factor>({
  id: 'id',
  userId: 'user_id',
  type: 'type',
  status: 'status',
  name: 'name',
  totpSecret: 'totp_secret',
  lastStep: 'last_step',
  credentialId: 'credential_id',
  publicKey: 'public_key',
  counter: 'counter',
  transports: 'transports',
  createdAt: 'created_at',
  lastUsedAt: 'last_used_at',
});

type Scope = { projectId: string; name: string };

/** A TOTP factor awaiting its first code; an earlier one still pending is dropped (one enrolment at a time). */
export async function insertPendingTotp(
  db: Queryable,
  env: Scope,
  userId: string,
  sealed: Buffer,
  name: string | null,
  now: Date,
): Promise<string> {
  await db.query(`DELETE FROM walgate.mfa_factors WHERE user_id = $1 AND type = 'totp' AND status = 'pending'`, [userId]);
  const { rows } = await db.query<{ id: string }>(
    `INSERT INTO walgate.mfa_factors (user_id, project_id, environment, type, status, name, totp_secret, created_at)
     VALUES ($1, $2, $3, 'totp', 'pending', $4, $5, $6) RETURNING id`,
    [userId, env.projectId, env.name, name, sealed, now],
  );
  return rows[0]!.id;
}

export async function insertPasskey(
  db: Queryable,
  env: Scope,
  userId: string,
  passkey: { credentialId: string; publicKey: Buffer; counter: number; transports: string[]; name: string | null },
  now: Date,
): Promise<Factor> {
  const { rows } = await db.query<Factor>(
    `INSERT INTO walgate.mfa_factors (user_id, project_id, environment, type, status, name, credential_id, public_key, counter, transports, created_at)
     VALUES ($1, $2, $3, 'webauthn', 'active', $4, $5, $6, $7, $8, $9) RETURNING ${COLUMNS}`,
    [userId, env.projectId, env.name, passkey.name, passkey.credentialId, passkey.publicKey, passkey.counter, passkey.transports, now],
  );
  return rows[0]!;
}

/** One of the user's factors (another user's id is as unknown as a made-up one). */
export async function findUserFactor(db: Queryable, userId: string, id: string): Promise<Factor | undefined> {
  const { rows } = await db.query<Factor>(`SELECT ${COLUMNS} FROM walgate.mfa_factors WHERE user_id = $1 AND id = $2`, [userId, id]);
  return rows[0];
}

export async function activeFactors(db: Queryable, userId: string): Promise<Factor[]> {
  const { rows } = await db.query<Factor>(
    `SELECT ${COLUMNS} FROM walgate.mfa_factors WHERE user_id = $1 AND status = 'active' ORDER BY created_at, id`,
    [userId],
  );
  return rows;
}

export async function findPasskey(db: Queryable, env: Scope, credentialId: string): Promise<Factor | undefined> {
  const { rows } = await db.query<Factor>(
    `SELECT ${COLUMNS} FROM walgate.mfa_factors WHERE project_id = $1 AND environment = $2 AND credential_id = $3`,
    [env.projectId, env.name, credentialId],
  );
  return rows[0];
}

/**
 * Accepts a TOTP code's step: true for exactly one caller, and only if the step is later than
 * every step accepted before (the same code twice, or an older one, is refused). Activates a
 * pending factor on its first code.
 */
export async function acceptTotpStep(db: Queryable, factorId: string, step: number, activate: boolean, now: Date): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE walgate.mfa_factors SET last_step = $2, last_used_at = $3, status = 'active'
      WHERE id = $1 AND type = 'totp' AND status = $4 AND (last_step IS NULL OR last_step < $2)`,
    [factorId, step, now, activate ? 'pending' : 'active'],
  );
  return (rowCount ?? 0) === 1;
}

/**
 * Records a passkey's new signature counter: true only if it moved forward (or the authenticator
 * keeps no counter, 0 then and now), so a replayed or cloned assertion loses even a race.
 */
export async function advancePasskeyCounter(db: Queryable, factorId: string, counter: number, now: Date): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE walgate.mfa_factors SET counter = $2, last_used_at = $3
      WHERE id = $1 AND (counter < $2 OR (counter = 0 AND $2 = 0))`,
    [factorId, counter, now],
  );
  return (rowCount ?? 0) === 1;
}

/** Deletes one of the user's factors; true if it existed. */
export async function deleteFactor(db: Queryable, userId: string, id: string): Promise<Factor | undefined> {
  const { rows } = await db.query<Factor>(`DELETE FROM walgate.mfa_factors WHERE user_id = $1 AND id = $2 RETURNING ${COLUMNS}`, [
    userId,
    id,
  ]);
  return rows[0];
}

export async function countActiveFactors(db: Queryable, userId: string): Promise<number> {
  const { rows } = await db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM walgate.mfa_factors WHERE user_id = $1 AND status = 'active'`,
    [userId],
  );
  return rows[0]!.n;
}

/**
 * Serialises changes of one user's factors until the transaction ends: whether a factor exists
 * already decides what a change needs (mfa/service.ts), so two first enrolments at once must not
 * both see none.
 */
export async function lockUserFactors(db: Queryable, userId: string): Promise<void> {
  await db.query(`SELECT pg_advisory_xact_lock(hashtextextended('walgate.mfa_factors:' || $1::text, 0))`, [userId]);
}
