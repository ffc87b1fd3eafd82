import { hash as argon2Hash, verify as argon2Verify } from '@node-rs/argon2';
import { verify as bcryptVerify } from '@node-rs/bcrypt';
import { ZxcvbnFactory } from '@zxcvbn-ts/core';
import { adjacencyGraphs, dictionary as commonDictionary } from '@zxcvbn-ts/language-common';
import { dictionary as englishDictionary, translations } from '@zxcvbn-ts/language-en';
import type { Violation } from '../core/errors.js';

// argon2id with OWASP's parameters, through a native binding that hashes off the event loop.
// Hashes of the bcrypt family (imported users) verify too, and are replaced on the next login.
const ARGON2ID = 2; // @node-rs/argon2's Algorithm.Argon2id (a const enum, absent at run time)
const ARGON2_OPTIONS = { algorithm: ARGON2ID, memoryCost: 19456, timeCost: 2, parallelism: 1 } as const;

export const MIN_PASSWORD_LENGTH = 8;
export const MAX_PASSWORD_LENGTH = 256;
const MIN_STRENGTH = 3;

export function hashPassword(password: string): Promise<string> {
  return argon2Hash(password, ARGON2_OPTIONS);
}

const BCRYPT = /^\$2[aby]\$/;

export async function verifyPassword(storedHash: string, password: string): Promise<boolean> {
  try {
    if (BCRYPT.test(storedHash)) return await bcryptVerify(password, storedHash);
    return await argon2Verify(storedHash, password);
  } catch {
    return false; // a malformed stored hash matches nothing
  }
}

/** True when the stored hash is not argon2id with today's parameters. */
export function needsRehash(storedHash: string): boolean {
  return !storedHash.startsWith('$argon2id$v=19$m=19456,t=2,p=1$');
}

/**
 * A hash to verify against when the e-mail is unknown, so that answering "wrong e-mail or password"
 * costs the same time whether or not the account exists.
 */
let dummyHash: Promise<string> | undefined;
export async function spendVerificationTime(password: string): Promise<false> {
  dummyHash ??= hashPassword('walgate-dummy-password-for-equal-timing');
  await verifyPassword(await dummyHash, password);
  return false;
}

/**
 * The strength estimate reads at most this many characters: a longer password is judged on this
 * prefix (it is at least as hard to guess as its prefix). zxcvbn-ts's own default (256) lets one
 * random 256-character password cost about 3 s of CPU; at 32 characters, with the l33t matcher's
 * substitutions capped too, the worst input measured costs 20-70 ms.
 */
export const STRENGTH_JUDGED_LENGTH = 32;

let strength: ZxcvbnFactory | undefined;
function estimator(): ZxcvbnFactory {
  strength ??= new ZxcvbnFactory({
    dictionary: { ...commonDictionary, ...englishDictionary },
    graphs: adjacencyGraphs,
    translations,
    maxLength: STRENGTH_JUDGED_LENGTH,
    // Each l33t character multiplies the variants tried: 100 (the default) costs 0.3-0.9 s on 16-64
    // characters of symbols and digits; 4 still sees through `P@ssw0rd1`.
    l33tMaxSubstitutions: 4,
  });
  return strength;
}

/** The length rule alone: free to check, so it is checked before anything that costs. */
export function lengthViolations(password: string, path = 'password'): Violation[] {
  if (password.length < MIN_PASSWORD_LENGTH) return [{ path, message: `must be at least ${MIN_PASSWORD_LENGTH} characters` }];
  if (password.length > MAX_PASSWORD_LENGTH) return [{ path, message: `must be at most ${MAX_PASSWORD_LENGTH} characters` }];
  return [];
}

/**
 * The password policy: 8 to 256 characters, no composition rules, refused when the strength
 * estimate (of the first STRENGTH_JUDGED_LENGTH characters) is below 3 of 4 or when it contains
 * the e-mail's local part. Each reason is a violation.
 */
export function passwordViolations(password: string, email: string, path = 'password'): Violation[] {
  const length = lengthViolations(password, path);
  if (length.length) return length;
  const violations: Violation[] = [];
  const local = email.split('@')[0]!.toLowerCase();
  if (local.length >= 3 && password.toLowerCase().includes(local)) {
    violations.push({ path, message: 'must not contain the e-mail address' });
  }
  const result = estimator().check(password.slice(0, STRENGTH_JUDGED_LENGTH), [local]);
  if (result.score < MIN_STRENGTH) {
    const hint = [result.feedback.warning, ...result.feedback.suggestions].filter(Boolean).join(' ');
    violations.push({ path, message: `is too easy to guess${hint ? `: ${hint}` : ''}` });
  }
  return violations;
}
