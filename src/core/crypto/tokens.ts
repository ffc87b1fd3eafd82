import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/** A random opaque token: `prefix` + 256 bits, base64url. */
export function randomToken(prefix = ''): string {
  return prefix + randomBytes(32).toString('base64url');
}

/** A short random id for resources (`wh_…`, `del_…`): 128 bits, base32-ish lower-case. */
export function randomId(prefix: string): string {
  return prefix + randomBytes(16).toString('hex');
}

/**
 * High-entropy tokens (refresh, management) are stored as plain SHA-256: with 256 random bits a
 * hash cannot be reversed, and a lookup by hash needs no per-row salt.
 */
export function hashToken(token: string): Buffer {
  return createHash('sha256').update(token).digest();
}

export function constantTimeEqual(a: Buffer, b: Buffer): boolean {
  return a.length === b.length && timingSafeEqual(a, b);
}
