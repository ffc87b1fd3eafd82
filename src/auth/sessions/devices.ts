import { randomBytes } from 'node:crypto';
import type { SecretBox } from '../../core/crypto/secretbox.js';
import { constantTimeEqual } from '../../core/crypto/tokens.js';

// Device tokens (OWASP's device cookies): a client that has logged in to an account receives a
// token signed for that account; when it presents it again, its login attempts are judged by its
// own failures only. Strangers' failures lock the account for unknown clients, never for the
// owner's known devices. Stateless: a device id, the time it was issued and a MAC over account,
// id and time. What it proves is that the client once knew the password, so it is worth nothing
// once the password has been reset (a past holder of the password keeps no exemption), nor after
// the environment's `deviceTokenTtlSeconds` (90 days): then the next right password issues a new one.
// Tokens of the earlier two-part form (no time) are worth nothing either.

const MAX_LENGTH = 200;

function mac(secrets: SecretBox, account: Buffer, deviceId: string, issued: string): Buffer {
  return secrets.mac(`device:${account.toString('base64url')}:${deviceId}:${issued}`);
}

export function issueDeviceToken(secrets: SecretBox, account: Buffer, now: Date): string {
  const deviceId = randomBytes(16).toString('base64url');
  const issued = now.getTime().toString(36);
  return `${deviceId}.${issued}.${mac(secrets, account, deviceId, issued).toString('base64url')}`;
}

export interface DeviceTokenRules {
  now: Date;
  ttlSeconds: number;
  /** The account's last password reset: tokens issued then or before are worth nothing. */
  passwordResetAt?: Date | null;
}

/** The device id of a live token signed for this account, or undefined (absent, forged, another account's, expired, or older than a reset). */
export function trustedDevice(secrets: SecretBox, account: Buffer, token: string | undefined, rules: DeviceTokenRules): string | undefined {
  if (!token || token.length > MAX_LENGTH) return undefined;
  const [deviceId, issued, signature, extra] = token.split('.');
  if (!deviceId || !issued || !signature || extra !== undefined || !/^[0-9a-z]{1,12}$/.test(issued)) return undefined;
  if (!constantTimeEqual(Buffer.from(signature, 'base64url'), mac(secrets, account, deviceId, issued))) return undefined;
  const issuedAt = parseInt(issued, 36);
  if (issuedAt + rules.ttlSeconds * 1000 <= rules.now.getTime()) return undefined;
  if (rules.passwordResetAt && issuedAt <= rules.passwordResetAt.getTime()) return undefined;
  return deviceId;
}
