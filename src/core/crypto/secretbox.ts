import { createCipheriv, createDecipheriv, createHmac, hkdfSync, randomBytes } from 'node:crypto';

// Authenticated encryption of secrets at rest (private signing keys, JWE keys, webhook secrets)
// under KEY_ENCRYPTION_KEY. Layout: version(1) | iv(12) | tag(16) | ciphertext.
// The associated data binds a ciphertext to its purpose, so a webhook secret cannot be swapped
// into a signing-key column and decrypt there.

const VERSION = 1;

export class SecretBox {
  readonly #key: Buffer;
  readonly #hmacKey: Buffer;

  constructor(keyEncryptionKey: Buffer) {
    if (keyEncryptionKey.length !== 32) throw new Error('KEY_ENCRYPTION_KEY must be 32 bytes');
    this.#key = Buffer.from(hkdfSync('sha256', keyEncryptionKey, Buffer.alloc(0), 'walgate/secretbox', 32));
    this.#hmacKey = Buffer.from(hkdfSync('sha256', keyEncryptionKey, Buffer.alloc(0), 'walgate/hmac', 32));
  }

  seal(plaintext: Buffer | string, purpose: string): Buffer {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.#key, iv);
    cipher.setAAD(Buffer.from(purpose));
    const body = Buffer.concat([cipher.update(plaintext), cipher.final()]);
    return Buffer.concat([Buffer.from([VERSION]), iv, cipher.getAuthTag(), body]);
  }

  open(sealed: Buffer, purpose: string): Buffer {
    if (sealed.length < 29 || sealed[0] !== VERSION) throw new Error('unrecognised sealed secret');
    const decipher = createDecipheriv('aes-256-gcm', this.#key, sealed.subarray(1, 13));
    decipher.setAAD(Buffer.from(purpose));
    decipher.setAuthTag(sealed.subarray(13, 29));
    return Buffer.concat([decipher.update(sealed.subarray(29)), decipher.final()]);
  }

  /** A keyed hash for low-entropy secrets (6-digit codes): useless without KEY_ENCRYPTION_KEY. */
  mac(message: string): Buffer {
    return createHmac('sha256', this.#hmacKey).update(message).digest();
  }
}
