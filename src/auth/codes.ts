import { randomInt } from 'node:crypto';
import type { SecretBox } from '../core/crypto/secretbox.js';
import { constantTimeEqual } from '../core/crypto/tokens.js';
import type { Queryable } from '../core/db/pool.js';

// One-time codes (signup confirmation, password recovery): 6 digits from a CSPRNG, stored only as
// a keyed hash (a bare hash of 10^6 possibilities would be reversed in a blink), limited in time
// and attempts, and consumed by exactly one caller.

/** `otp`: a passwordless sign-in code (passwordless/). */
export type CodePurpose = 'signup' | 'recovery' | 'otp';

function codeHash(secrets: SecretBox, userId: string, purpose: CodePurpose, code: string): Buffer {
  return secrets.mac(`code:${purpose}:${userId}:${code}`);
}

/** A fresh code for the user and purpose, with fresh attempts; it replaces any earlier one. */
export async function issueCode(
  db: Queryable,
  secrets: SecretBox,
  userId: string,
  purpose: CodePurpose,
  expiresAt: Date,
  now: Date,
): Promise<string> {
  const code = randomInt(0, 1_000_000).toString().padStart(6, '0');
  await db.query(
    `INSERT INTO walgate.verification_codes (user_id, purpose, code_hash, attempts, expires_at, created_at)
     VALUES ($1, $2, $3, 0, $4, $5)
     ON CONFLICT (user_id, purpose) DO UPDATE SET code_hash = EXCLUDED.code_hash, attempts = 0,
       expires_at = EXCLUDED.expires_at, created_at = EXCLUDED.created_at`,
    [userId, purpose, codeHash(secrets, userId, purpose, code), expiresAt, now],
  );
  return code;
}

/** The user's live code for a purpose, once the guess that matched it was counted. */
export interface MatchedCode {
  readonly hash: Buffer;
}

/**
 * The live code when `code` is it. Each call spends an attempt of the code first, in one
 * statement, so concurrent guesses cannot exceed the limit; a code out of attempts matches
 * nothing. Guesses are budgeted per code and per requesting client (the callers' rate limits),
 * never per user: a stranger's wrong guesses must not spend the owner's budget, and a new code
 * comes with a new budget. The code stays until taken.
 */
export async function matchCode(
  db: Queryable,
  secrets: SecretBox,
  userId: string,
  purpose: CodePurpose,
  code: string,
  maxAttempts: number,
  now: Date,
): Promise<MatchedCode | undefined> {
  const { rows } = await db.query<{ code_hash: Buffer }>(
    `UPDATE walgate.verification_codes SET attempts = attempts + 1
      WHERE user_id = $1 AND purpose = $2 AND attempts < $3 AND expires_at > $4
      RETURNING code_hash`,
    [userId, purpose, maxAttempts, now],
  );
  const stored = rows[0]?.code_hash;
  if (!stored || !constantTimeEqual(stored, codeHash(secrets, userId, purpose, code))) return undefined;
  return { hash: stored };
}

/** Uses up a matched code: true for exactly one caller, so two right answers make one winner. */
export async function takeCode(db: Queryable, userId: string, purpose: CodePurpose, matched: MatchedCode): Promise<boolean> {
  const consumed = await db.query('DELETE FROM walgate.verification_codes WHERE user_id = $1 AND purpose = $2 AND code_hash = $3', [
    userId,
    purpose,
    matched.hash,
  ]);
  return (consumed.rowCount ?? 0) === 1;
}

/** True when `code` is the user's live code for the purpose, which is then gone. */
export async function consumeCode(
  db: Queryable,
  secrets: SecretBox,
  userId: string,
  purpose: CodePurpose,
  code: string,
  maxAttempts: number,
  now: Date,
): Promise<boolean> {
  const matched = await matchCode(db, secrets, userId, purpose, code, maxAttempts, now);
  return matched !== undefined && (await takeCode(db, userId, purpose, matched));
}
