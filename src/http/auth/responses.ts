import { z } from 'zod';
import { timestamp } from '../timestamp.js';
import { TENANT_NAME, TENANT_NAME_RULE } from '../../projects/environments.js';

// What the auth endpoints answer, as schemas for the API reference. test/docs/contract.test.ts
// checks real answers against the generated document, so a field added or renamed in a service
// without its schema here fails the tests.

export const user = z.object({
  id: z.uuid(),
  email: z.string(),
  name: z.string().nullable(),
  emailVerified: z.boolean(),
  createdAt: timestamp,
  userMetadata: z
    .record(z.string(), z.unknown())
    .meta({ description: "The user's own data (`PATCH /auth/me`), a JSON object of at most 16 KB." }),
  appMetadata: z
    .record(z.string(), z.unknown())
    .meta({ description: 'Set by operators only (the admin API); copied into access tokens as the `app_metadata` claim.' }),
});

export const tokenPair = z.object({
  accessToken: z.string().meta({
    description: 'A JWT (JWS, or a 5-part JWE for environments set to `--token-format jwe`), valid 15 minutes.',
    examples: ['eyJhbGciOiJFUzI1NiIsImtpZCI6…'],
  }),
  refreshToken: z
    .string()
    .meta({ description: 'Opaque, single use, valid 30 days: exchanging it issues a new pair.', examples: ['Zk3xQ0u1…'] }),
  tokenType: z.literal('Bearer'),
  expiresIn: z
    .int()
    .positive()
    .meta({ description: 'Seconds until the access token expires.', examples: [900] }),
});

const deviceToken = z.string().meta({
  description:
    "Keep it, and send it as `X-Device-Token` with later logins to this account: a known device keeps logging in while strangers' failures lock the account for unknown clients.",
});

export const loginResponse = tokenPair.extend({ deviceToken });

export const signupResponse = z.object({ userId: z.uuid(), message: z.string() });

export const confirmSignupResponse = tokenPair.extend({ deviceToken, user });

export const messageResponse = z.object({ message: z.string() });

export const meUserResponse = z.object({ user });

export const meResponse = z.object({
  user,
  session: z.object({ id: z.uuid(), expiresAt: timestamp.meta({ description: 'When the refresh token of the session expires.' }) }),
});

// Public JWKs carry algorithm-specific members (crv, x, y, n, e): the key set is open to them.
const publicKey = z.looseObject({
  kty: z.string(),
  kid: z.string().meta({ description: "The key's RFC 7638 thumbprint; tokens name it in their header." }),
  alg: z.string(),
  use: z.literal('sig'),
});

export const jwksResponse = z.object({ keys: z.array(publicKey) });

export const sessionsResponse = z.object({
  sessions: z.array(
    z.object({
      id: z.uuid(),
      createdAt: timestamp.meta({ description: 'When the session began (its login).' }),
      lastUsedAt: timestamp.meta({ description: 'Its last login or refresh.' }),
      ip: z.string().nullable().meta({ description: 'The client address of its last login or refresh (IPv6: its /64).' }),
      userAgent: z.string().nullable(),
      current: z.boolean().meta({ description: 'True for the session of the access token that asks.' }),
      impersonated: z.boolean().meta({
        description:
          'True for a session an operator started as the user (`POST /api/rest/_users/{id}/impersonate`); end it like any other.',
      }),
    }),
  ),
});

export const issuerParams = z.object({
  projectId: z.string().regex(TENANT_NAME, TENANT_NAME_RULE),
  environment: z.string().regex(TENANT_NAME, TENANT_NAME_RULE),
});

/** OpenID Connect Discovery 1.0 §3 (the members a resource server needs; others may follow). */
export const discoveryResponse = z.looseObject({
  issuer: z.string(),
  jwks_uri: z.string(),
  id_token_signing_alg_values_supported: z.array(z.string()),
  subject_types_supported: z.array(z.string()),
  claims_supported: z.array(z.string()),
});
