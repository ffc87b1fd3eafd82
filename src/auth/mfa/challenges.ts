import { hashToken, randomToken } from '../../core/crypto/tokens.js';
import type { Queryable } from '../../core/db/pool.js';

// The mfaToken: what a right password (or a provider's word) earns a user who has a second
// factor. It lives 5 minutes, belongs to one user in one environment, is stored as a hash, gives
// 5 tries, and is taken by the one request that presents a right second factor.

export const MFA_TOKEN_TTL_SECONDS = 300;
export const MFA_TOKEN_ATTEMPTS = 5;
const PREFIX = 'mfa_';

type Scope = { projectId: string; name: string };

export async function issueMfaToken(db: Queryable, env: Scope, userId: string, amr: readonly string[], now: Date): Promise<string> {
  const token = randomToken(PREFIX);
  // Steps never finished go as new ones come: the table holds about five minutes' worth.
  await db.query('DELETE FROM walgate.mfa_challenges WHERE expires_at < $1', [now]);
  await db.query(
    `INSERT INTO walgate.mfa_challenges (token_hash, user_id, project_id, environment, amr, expires_at) VALUES ($1, $2, $3, $4, $5, $6)`,
    [hashToken(token), userId, env.projectId, env.name, [...amr], new Date(now.getTime() + MFA_TOKEN_TTL_SECONDS * 1000)],
  );
  return token;
}

export interface MfaStep {
  userId: string;
  /** How the user got this far (`pwd`, `fed`). */
  amr: string[];
}

/**
 * Spends one try of a live mfaToken of this environment, in one statement, so concurrent guesses
 * cannot exceed the tries; a token out of tries, expired, taken or unknown gives undefined.
 */
export async function spendMfaAttempt(db: Queryable, env: Scope, token: string, now: Date): Promise<MfaStep | undefined> {
  if (!token.startsWith(PREFIX) || token.length > 100) return undefined;
  const { rows } = await db.query<MfaStep>(
    `UPDATE walgate.mfa_challenges SET attempts = attempts + 1
      WHERE token_hash = $1 AND project_id = $2 AND environment = $3 AND attempts < $4 AND expires_at > $5
      RETURNING user_id AS "userId", amr`,
    [hashToken(token), env.projectId, env.name, MFA_TOKEN_ATTEMPTS, now],
  );
  return rows[0];
}

/** Takes the token (a right factor was shown): true for exactly one caller. */
export async function takeMfaToken(db: Queryable, token: string): Promise<boolean> {
  const { rowCount } = await db.query('DELETE FROM walgate.mfa_challenges WHERE token_hash = $1', [hashToken(token)]);
  return (rowCount ?? 0) === 1;
}

/** Ends every outstanding MFA step of the user (a password reset: the password that began them is gone). */
export async function dropMfaTokens(db: Queryable, userId: string): Promise<void> {
  await db.query('DELETE FROM walgate.mfa_challenges WHERE user_id = $1', [userId]);
}
