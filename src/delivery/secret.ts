import type { SecretBox } from '../core/crypto/secretbox.js';

// Webhook signing secrets are needed in plaintext to sign, so they are encrypted at rest (not
// hashed) under KEY_ENCRYPTION_KEY, bound to this purpose.
const PURPOSE = 'webhook-secret';

export function sealWebhookSecret(secrets: SecretBox, secret: string): Buffer {
  return secrets.seal(secret, PURPOSE);
}

export function openWebhookSecret(secrets: SecretBox, sealed: Buffer): string {
  return secrets.open(sealed, PURPOSE).toString('utf8');
}
