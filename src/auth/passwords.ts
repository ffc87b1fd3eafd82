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
export async function spendVerificationTime(password: string): Promise<void> {
  dummyHash ??= hashPassword('walgate-dummy-password-for-equal-timing');
  await verifyPassword(await dummyHash, password);
}

let strength: ZxcvbnFactory | undefined;
function estimator(): ZxcvbnFactory {
  strength ??= new ZxcvbnFactory({
    dictionary: { ...commonDictionary, ...englishDictionary },
    graphs: adjacencyGraphs,
    translations,
  });
  return strength;
}

/**
 * The password policy: 8 to 256 characters, no composition rules, refused when the strength
 * estimate is below 3 of 4 or when it contains the e-mail's local part. Each reason is a violation.
 */
export function passwordViolations(password: string, email: string, path = 'password'): Violation[] {
  if (password.length < MIN_PASSWORD_LENGTH) return [{ path, message: `must be at least ${MIN_PASSWORD_LENGTH} characters` }];
  if (password.length > MAX_PASSWORD_LENGTH) return [{ path, message: `must be at most ${MAX_PASSWORD_LENGTH} characters` }];
  const violations: Violation[] = [];
  const local = email.split('@')[0]!.toLowerCase();
  if (local.length >= 3 && password.toLowerCase().includes(local)) {
    violations.push({ path, message: 'must not contain the e-mail address' });
  }
  const result = estimator().check(password, [local]);
  if (result.score < MIN_STRENGTH) {
    const hint = [result.feedback.warning, ...result.feedback.suggestions].filter(Boolean).join(' ');
    violations.push({ path, message: `is too easy to guess${hint ? `: ${hint}` : ''}` });
  }
  return violations;
}
