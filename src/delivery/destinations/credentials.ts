import type { SecretBox } from '../../core/crypto/secretbox.js';

// A destination's credentials are needed in plaintext to connect, so they are encrypted at rest
// (not hashed) under KEY_ENCRYPTION_KEY, bound to this purpose, all three in one sealed value.
const PURPOSE = 'destination-credentials';

export const CREDENTIAL_NAMES = ['username', 'password', 'token'] as const;
export type CredentialName = (typeof CREDENTIAL_NAMES)[number];
export type Credentials = Partial<Record<CredentialName, string>>;

export function sealCredentials(secrets: SecretBox, credentials: Credentials): { sealed: Buffer | null; names: CredentialName[] } {
  const names = CREDENTIAL_NAMES.filter((n) => credentials[n] !== undefined);
  if (names.length === 0) return { sealed: null, names };
  const kept = Object.fromEntries(names.map((n) => [n, credentials[n]]));
  return { sealed: secrets.seal(JSON.stringify(kept), PURPOSE), names };
}

export function openCredentials(secrets: SecretBox, sealed: Buffer | null): Credentials {
  if (!sealed) return {};
  return JSON.parse(secrets.open(sealed, PURPOSE).toString('utf8')) as Credentials;
}

/**
 * An error message with the secrets cut out (a broker or client library may echo one back). The
 * user name stays: it is no secret, and cutting a common word would garble the message.
 */
export function redact(text: string, credentials: Credentials): string {
  let out = text;
  for (const value of [credentials.password, credentials.token]) if (value && value.length >= 3) out = out.split(value).join('[redacted]');
  return out;
}
