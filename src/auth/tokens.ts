import { randomUUID } from 'node:crypto';
import { compactDecrypt, CompactEncrypt, decodeProtectedHeader, errors, jwtVerify, SignJWT } from 'jose';
import type { Environment } from '../projects/environments.js';
import { AppError } from '../core/errors.js';
import { assuranceLevel, type AssuranceLevel } from './assurance.js';
import type { KeyRing } from './keyring.js';
import { organizationClaims, type ActiveOrganization, type OrganizationClaims } from './active-organization.js';

// Access tokens: a signed JWT (JWS), or — for environments set to `jwe` — that JWT encrypted
// (`dir` + A256GCM) under a key that is never published. Both forms are accepted inbound.

/** A token of a session switched to an organization also carries `org_*` (active-organization.ts). */
export interface AccessClaims extends Partial<OrganizationClaims> {
  sub: string;
  sid: string;
  email: string;
  env: string;
  exp: number;
  /** How the user proved who they are; tokens issued before this claim existed lack it (a password). */
  amr?: string[];
  aal?: AssuranceLevel;
}

export interface IssueInput {
  userId: string;
  email: string;
  sessionId: string;
  issuer: string;
  now: Date;
  /** How the user proved who they are (assurance.ts); `aal` is derived from it. */
  amr: readonly string[];
  /** Operators' data on the user: resource servers authorise from it without a call. */
  appMetadata?: Record<string, unknown>;
  /** The session's active organization: `org_id`, `org_role`, `org_permissions`, `org_mid`. */
  organization?: ActiveOrganization;
}

/** Every claim of an access token, before signing: what a claims function (claims/) is shown and may add to. */
export type AccessPayload = Record<string, unknown> & { sub: string; iat: number; exp: number; jti: string };

export function accessPayload(env: Environment, input: IssueInput): AccessPayload {
  const iat = Math.floor(input.now.getTime() / 1000);
  const claims = {
    iss: input.issuer,
    sub: input.userId,
    aud: env.projectId,
    exp: iat + env.accessTokenTtlSeconds,
    iat,
    nbf: iat,
    jti: randomUUID(),
    sid: input.sessionId,
    env: env.name,
    email: input.email,
    amr: [...input.amr],
    aal: assuranceLevel(input.amr),
  };
  // RFC 8693 §4.1: an impersonation session's tokens name who acts (users/impersonate.ts).
  const actor = input.amr.includes('impersonation') ? { act: { sub: 'operator' } } : {};
  // The session's active organization (organizations/): org_id, org_role, org_permissions, org_mid.
  const organization = input.organization ? organizationClaims(input.organization) : {};
  return input.appMetadata
    ? { ...claims, ...actor, ...organization, app_metadata: input.appMetadata }
    : { ...claims, ...actor, ...organization };
}

export async function issueAccessToken(ring: KeyRing, env: Environment, input: IssueInput): Promise<{ token: string; expiresIn: number }> {
  return signAccessToken(ring, env, accessPayload(env, input));
}

/** Signs (and for `jwe` environments encrypts) a payload of accessPayload, extra claims merged in or not. */
export async function signAccessToken(
  ring: KeyRing,
  env: Environment,
  payload: AccessPayload,
): Promise<{ token: string; expiresIn: number }> {
  const { kid, alg, key } = await ring.signingKey(env);
  const jws = await new SignJWT(payload).setProtectedHeader({ alg, kid, typ: 'JWT' }).sign(key);
  if (env.tokenFormat !== 'jwe') return { token: jws, expiresIn: env.accessTokenTtlSeconds };
  const jwe = await new CompactEncrypt(new TextEncoder().encode(jws))
    .setProtectedHeader({ alg: 'dir', enc: 'A256GCM', cty: 'JWT' })
    .encrypt(ring.jweKey(env));
  return { token: jwe, expiresIn: env.accessTokenTtlSeconds };
}

const invalid = () => new AppError('AUTH_TOKEN_INVALID');
// The largest token walgate issues: 4 KB of appMetadata (users/metadata.ts) and the largest active
// organization (32 permissions) nested in a JWE are about 11 KB, 1 KB of a claims function's claims
// (claims/call.ts) adds 1.8 KB; anything longer is refused before any parsing. Node accepts 16 KB of headers.
const MAX_TOKEN_LENGTH = 14 * 1024;

/**
 * Verifies an access token for this environment. Keys are looked up only among the environment's
 * own (by `kid`), so another project's token, a forged `kid`, `jku`/`jwk`/`x5u` headers and
 * `alg: none` or HMAC-with-the-public-key tricks all fail; the accepted algorithm is the key's own.
 * An expired token says so only once its signature has proved it genuine.
 */
export async function verifyAccessToken(
  ring: KeyRing,
  env: Environment,
  token: string,
  /** The issuers accepted (issuer.ts: the environment's own, and the one older tokens carry). */
  issuer: string | string[],
  now: Date,
  /** Seconds another instance's clock may be ahead or behind (TOKEN_CLOCK_SKEW_SECONDS): exp, nbf and iat get that much slack. */
  clockToleranceSeconds = 0,
): Promise<AccessClaims> {
  if (token.length > MAX_TOKEN_LENGTH) throw invalid();
  const parts = token.split('.');
  let jws = token;
  if (parts.length === 5) {
    try {
      const { plaintext } = await compactDecrypt(token, ring.jweKey(env), {
        keyManagementAlgorithms: ['dir'],
        contentEncryptionAlgorithms: ['A256GCM'],
      });
      jws = new TextDecoder().decode(plaintext);
    } catch {
      throw invalid();
    }
  } else if (parts.length !== 3) {
    throw invalid();
  }
  let kid: unknown;
  try {
    kid = decodeProtectedHeader(jws).kid;
  } catch {
    throw invalid();
  }
  if (typeof kid !== 'string' || kid.length > 200) throw invalid();
  const key = await ring.verificationKey(env, kid);
  if (!key) throw invalid();
  try {
    const { payload } = await jwtVerify(jws, key.key, {
      algorithms: [key.alg],
      issuer,
      audience: env.projectId,
      currentDate: now,
      clockTolerance: clockToleranceSeconds,
    });
    if (payload.env !== env.name || typeof payload.sid !== 'string' || typeof payload.sub !== 'string') throw invalid();
    return payload as unknown as AccessClaims;
  } catch (err) {
    if (err instanceof errors.JWTExpired) throw new AppError('AUTH_TOKEN_EXPIRED');
    throw invalid();
  }
}

/** The bearer token of an Authorization header, or 401 AUTH_TOKEN_INVALID. */
export function bearerToken(header: string | undefined): string {
  const match = /^Bearer[ ]+([^\s]+)\s*$/i.exec(header ?? '');
  if (!match) {
    // No bearer credentials at all: the challenge names the scheme without an error code
    // (RFC 6750 §3.1); error="invalid_token" is for a token that was presented and failed.
    const presented = /^Bearer\b/i.test(header ?? '');
    throw new AppError(
      'AUTH_TOKEN_INVALID',
      'An Authorization: Bearer <token> header is required.',
      {},
      presented ? {} : { 'WWW-Authenticate': 'Bearer realm="walgate"' },
    );
  }
  return match[1]!;
}
