import { randomBytes } from 'node:crypto';
import type { SecretBox } from '../../core/crypto/secretbox.js';
import { constantTimeEqual } from '../../core/crypto/tokens.js';

// Device tokens (OWASP's device cookies): a client that has logged in to an account receives a
// token signed for that account; when it presents it again, its login attempts are judged by its
// own failures only. Strangers' failures lock the account for unknown clients, never for the
// owner's known devices. Stateless: a device id and a MAC over account and id.

const MAX_LENGTH = 200;

function mac(secrets: SecretBox, account: Buffer, deviceId: string): Buffer {
  return secrets.mac(`device:${account.toString('base64url')}:${deviceId}`);
}

export function issueDeviceToken(secrets: SecretBox, account: Buffer): string {
  const deviceId = randomBytes(16).toString('base64url');
  return `${deviceId}.${mac(secrets, account, deviceId).toString('base64url')}`;
}

/** The device id of a token signed for this account, or undefined (absent, forged, or another account's). */
export function trustedDevice(secrets: SecretBox, account: Buffer, token: string | undefined): string | undefined {
  if (!token || token.length > MAX_LENGTH) return undefined;
  const [deviceId, signature, extra] = token.split('.');
  if (!deviceId || !signature || extra !== undefined) return undefined;
  return constantTimeEqual(Buffer.from(signature, 'base64url'), mac(secrets, account, deviceId)) ? deviceId : undefined;
}
