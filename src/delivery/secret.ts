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

/** Subscriptions' signing secrets, decrypted once per sealed value (a rotation seals a new one). */
export class OpenedSecrets {
  readonly #opened = new Map<string, string>();

  constructor(private readonly openSecret: (sealed: Buffer) => string) {}

  open(sealed: Buffer): string {
    const key = sealed.toString('base64');
    let secret = this.#opened.get(key);
    if (secret === undefined) {
      if (this.#opened.size >= 10_000) this.#opened.clear();
      secret = this.openSecret(sealed);
      this.#opened.set(key, secret);
    }
    return secret;
  }
}
