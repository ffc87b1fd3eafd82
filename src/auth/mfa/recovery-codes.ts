import { randomBytes } from 'node:crypto';
import type { SecretBox } from '../../core/crypto/secretbox.js';
import type { Queryable } from '../../core/db/pool.js';

// Recovery codes: ten a set, each `xxxxx-xxxxx` (50 random bits from an alphabet without look-alike
// characters), shown once and stored as keyed hashes; each works once. A new set replaces the old.

export const RECOVERY_CODES_PER_SET = 10;
const ALPHABET = 'abcdefghjkmnpqrstuvwxyz23456789'; // no i, l, o, 0, 1
const HALF = 5;

/** A recovery code as typed: case, spaces and the dash do not matter. */
export const RECOVERY_CODE = /^[a-z0-9]{5}-?[a-z0-9]{5}$/;

export function normaliseRecoveryCode(input: string): string {
  return input.toLowerCase().replace(/[\s-]/g, '');
}

function newCode(): string {
  // 256 is not a multiple of 31: rejection sampling keeps every character equally likely.
  let out = '';
  while (out.length < 2 * HALF) {
    for (const b of randomBytes(16)) if (b < 248 && out.length < 2 * HALF) out += ALPHABET[b % ALPHABET.length];
  }
  return `${out.slice(0, HALF)}-${out.slice(HALF)}`;
}

function codeHash(secrets: SecretBox, userId: string, code: string): Buffer {
  return secrets.mac(`mfa-recovery:${userId}:${normaliseRecoveryCode(code)}`);
}

/** A fresh set for the user, replacing any earlier one; the codes are returned once, here. */
export async function replaceRecoveryCodes(db: Queryable, secrets: SecretBox, userId: string, now: Date): Promise<string[]> {
  const codes = Array.from({ length: RECOVERY_CODES_PER_SET }, newCode);
  await db.query('DELETE FROM walgate.mfa_recovery_codes WHERE user_id = $1', [userId]);
  await db.query(`INSERT INTO walgate.mfa_recovery_codes (user_id, code_hash, created_at) SELECT $1, h, $3 FROM unnest($2::bytea[]) AS h`, [
    userId,
    codes.map((c) => codeHash(secrets, userId, c)),
    now,
  ]);
  return codes;
}

/**
 * Uses up one of the user's codes: true for exactly one caller. The code is found by its keyed
 * hash, so nothing about a stored code can be learnt by timing a guess.
 */
export async function useRecoveryCode(db: Queryable, secrets: SecretBox, userId: string, code: string, now: Date): Promise<boolean> {
  const { rowCount } = await db.query(
    'UPDATE walgate.mfa_recovery_codes SET used_at = $3 WHERE user_id = $1 AND code_hash = $2 AND used_at IS NULL',
    [userId, codeHash(secrets, userId, code), now],
  );
  return (rowCount ?? 0) === 1;
}

export async function unusedRecoveryCodes(db: Queryable, userId: string): Promise<number> {
  const { rows } = await db.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM walgate.mfa_recovery_codes WHERE user_id = $1 AND used_at IS NULL',
    [userId],
  );
  return rows[0]!.n;
}

export async function dropRecoveryCodes(db: Queryable, userId: string): Promise<void> {
  await db.query('DELETE FROM walgate.mfa_recovery_codes WHERE user_id = $1', [userId]);
}
