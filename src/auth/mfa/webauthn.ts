import {
  generateAuthenticationOptions,
  generateRegistrationOptions,
  verifyAuthenticationResponse,
  verifyRegistrationResponse,
  type AuthenticationResponseJSON,
  type PublicKeyCredentialCreationOptionsJSON,
  type PublicKeyCredentialRequestOptionsJSON,
  type RegistrationResponseJSON,
} from '@simplewebauthn/server';
import { decodeClientDataJSON } from '@simplewebauthn/server/helpers';
import type { Queryable } from '../../core/db/pool.js';
import type { Environment } from '../../projects/environments.js';
import type { Factor } from './factors.js';

// Passkeys through @simplewebauthn/server: the relying party of an environment, the options a
// browser passes to navigator.credentials, and the checks of what it answers. Each challenge is
// stored when handed out and taken (deleted) by the one answer that presents it.

const CHALLENGE_TTL_SECONDS = 300;

export interface RelyingParty {
  id: string;
  name: string;
  origins: string[];
}

/** The environment's relying party (settings `webauthn`), PUBLIC_URL's host and origin by default. */
export function relyingParty(env: Environment, publicUrl: string): RelyingParty {
  const url = new URL(publicUrl);
  const s = env.settings.webauthn;
  return { id: s.rpId ?? url.hostname, name: s.rpName ?? env.projectId, origins: s.origins.length ? s.origins : [url.origin] };
}

type Scope = { projectId: string; name: string };

async function storeChallenge(
  db: Queryable,
  env: Scope,
  challenge: string,
  purpose: 'register' | 'login',
  userId: string | null,
  now: Date,
) {
  // Expired ones go as new ones come: the table holds about five minutes' worth.
  await db.query('DELETE FROM walgate.webauthn_challenges WHERE expires_at < $1', [now]);
  await db.query(
    `INSERT INTO walgate.webauthn_challenges (challenge, purpose, user_id, project_id, environment, expires_at) VALUES ($1, $2, $3, $4, $5, $6)`,
    [challenge, purpose, userId, env.projectId, env.name, new Date(now.getTime() + CHALLENGE_TTL_SECONDS * 1000)],
  );
}

/**
 * Takes the live challenge that the answer's clientDataJSON names: the user it was handed out to
 * (null for a sign-in without an mfaToken), or undefined when it is unknown, expired, already
 * answered, or from another environment or purpose. Garbage in clientDataJSON is undefined too.
 */
export async function takeChallenge(
  db: Queryable,
  env: Scope,
  clientDataJSON: string,
  purpose: 'register' | 'login',
  now: Date,
): Promise<{ challenge: string; userId: string | null } | undefined> {
  let challenge: unknown;
  try {
    challenge = decodeClientDataJSON(clientDataJSON).challenge;
  } catch {
    return undefined;
  }
  if (typeof challenge !== 'string' || challenge.length > 200) return undefined;
  const { rows } = await db.query<{ userId: string | null }>(
    `DELETE FROM walgate.webauthn_challenges
      WHERE challenge = $1 AND purpose = $2 AND project_id = $3 AND environment = $4 AND expires_at > $5
      RETURNING user_id AS "userId"`,
    [challenge, purpose, env.projectId, env.name, now],
  );
  return rows[0] && { challenge, userId: rows[0].userId };
}

export async function registrationOptions(
  db: Queryable,
  env: Environment,
  rp: RelyingParty,
  user: { id: string; email: string; name: string | null },
  existing: Factor[],
  now: Date,
): Promise<PublicKeyCredentialCreationOptionsJSON> {
  const options = await generateRegistrationOptions({
    rpName: rp.name,
    rpID: rp.id,
    userName: user.email,
    userDisplayName: user.name ?? user.email,
    // The user handle is the user id: a passwordless sign-in's assertion names its account.
    userID: new TextEncoder().encode(user.id),
    attestationType: 'none',
    excludeCredentials: existing.filter((f) => f.credentialId).map((f) => ({ id: f.credentialId!, transports: f.transports ?? undefined })),
    // Discoverable, so the same passkey signs in without an e-mail address.
    authenticatorSelection: { residentKey: 'required', userVerification: 'preferred' },
  });
  await storeChallenge(db, env, options.challenge, 'register', user.id, now);
  return options;
}

export async function authenticationOptions(
  db: Queryable,
  env: Environment,
  rp: RelyingParty,
  forUser: { id: string; passkeys: Factor[] } | undefined,
  now: Date,
): Promise<PublicKeyCredentialRequestOptionsJSON> {
  const options = await generateAuthenticationOptions({
    rpID: rp.id,
    // Passwordless: any discoverable passkey of this site; as a second factor: that user's.
    allowCredentials: forUser?.passkeys.map((f) => ({ id: f.credentialId!, transports: (f.transports ?? undefined) as never })),
    userVerification: forUser ? 'preferred' : 'required',
  });
  await storeChallenge(db, env, options.challenge, 'login', forUser?.id ?? null, now);
  return options;
}

/** The new credential, or undefined when the answer does not verify (any failure of the library included). */
export async function checkRegistration(response: RegistrationResponseJSON, challenge: string, rp: RelyingParty) {
  try {
    const result = await verifyRegistrationResponse({
      response,
      expectedChallenge: challenge,
      expectedOrigin: rp.origins,
      expectedRPID: rp.id,
      requireUserVerification: false,
    });
    return result.verified ? result.registrationInfo.credential : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The authenticator's new counter, or undefined when the assertion does not verify: wrong
 * signature, origin or relying party, no user verification for a passwordless sign-in, or a
 * counter that did not move past the stored one (a replayed or cloned authenticator).
 */
export async function checkAssertion(
  response: AuthenticationResponseJSON,
  challenge: string,
  rp: RelyingParty,
  passkey: Factor,
  requireUserVerification: boolean,
): Promise<number | undefined> {
  try {
    const result = await verifyAuthenticationResponse({
      response,
      expectedChallenge: challenge,
      expectedOrigin: rp.origins,
      expectedRPID: rp.id,
      credential: {
        id: passkey.credentialId!,
        publicKey: new Uint8Array(passkey.publicKey!),
        counter: Number(passkey.counter ?? 0),
        transports: passkey.transports ?? undefined,
      },
      requireUserVerification,
    });
    return result.verified ? result.authenticationInfo.newCounter : undefined;
  } catch {
    return undefined;
  }
}
