// How a user proved who they are, and what that is worth. The method names are RFC 8176's
// (`pwd`, `otp`, `webauthn`) plus `recovery` (a single-use recovery code) and `fed` (an identity
// provider vouched for the user), `impersonation` (an operator acts as the user: users/impersonate.ts)
// and `email` (control of the mailbox: a confirm-signup code or a magic link; after `otp`, says
// that code was e-mailed, see passwordless/); the levels are NIST SP 800-63B's authenticator assurance levels.

export const AUTH_METHODS = ['pwd', 'otp', 'webauthn', 'recovery', 'fed', 'email', 'impersonation'] as const;
export type AuthMethod = (typeof AUTH_METHODS)[number];

export type AssuranceLevel = 'aal1' | 'aal2';

/** Methods that prove possession of a second factor when they follow another method. */
const SECOND_FACTORS: ReadonlySet<AuthMethod> = new Set(['otp', 'webauthn', 'recovery']);

/**
 * `aal2` when two different methods were used, one of them a second factor, or when the user signed
 * in with a passkey (WebAuthn with user verification is possession and knowledge or inherence in
 * one step); `aal1` otherwise.
 */
export function assuranceLevel(amr: readonly string[]): AssuranceLevel {
  if (amr.includes('webauthn')) return 'aal2';
  const distinct = new Set(amr);
  // An e-mailed code (`otp` then `email`) is the first factor, like a password: only a second factor after it counts.
  const second = amr.some((m, i) => SECOND_FACTORS.has(m as AuthMethod) && !(m === 'otp' && amr[i + 1] === 'email'));
  return distinct.size >= 2 && second ? 'aal2' : 'aal1';
}
