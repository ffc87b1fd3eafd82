import { z } from 'zod';
import type { ErrorCode } from '../../../core/errors.js';
import { TENANT_NAME, TENANT_NAME_RULE } from '../../../projects/environments.js';
import { PROVIDER_ID } from '../../../projects/providers.js';
import { ANY_REQUEST_ERRORS, JSON_BODY_ERRORS, type Operation, type OperationGroup } from '../../operation.js';
import { projectHeaders } from '../../scope.js';
import { mfaRequiredResponse } from '../mfa/responses.js';
import { tokenPair } from '../responses.js';
import { timestamp } from '../../timestamp.js';
import { providerTokenBody } from '../../../auth/schemas.js';

// Sign-in with an identity provider (docs/providers.md), declared once for the router
// (routes.ts) and the reference. The two browser navigations (authorize, callback) carry no
// custom headers: the project and environment come in the query, then in the flow's state.

const AUTH_SCOPE = ['VALIDATION_ERROR', 'AUTH_NOT_CONFIGURED'] as const satisfies readonly ErrorCode[];
const ACCESS_TOKEN = ['AUTH_TOKEN_INVALID', 'AUTH_TOKEN_EXPIRED'] as const satisfies readonly ErrorCode[];
const common = [...AUTH_SCOPE, ...ANY_REQUEST_ERRORS] as const;

const name = z.string().regex(TENANT_NAME, TENANT_NAME_RULE);
const providerParams = z.object({
  id: z.string().regex(PROVIDER_ID, 'must be a provider id').meta({ description: 'The provider id, as in the settings.' }),
});

/** RFC 7636 §4.2: an S256 challenge is 43 base64url characters. */
const codeChallenge = z.string().regex(/^[A-Za-z0-9_-]{43}$/, 'must be BASE64URL(SHA-256(code_verifier)), 43 characters');

const authorizeQuery = z.object({
  projectId: name.meta({ description: 'The project.' }),
  environment: name.optional().meta({ description: 'The environment (default `master`).' }),
  redirect_to: z
    .string()
    .max(2048)
    .meta({ description: "Where to come back with the one-time `code`: exactly one of the provider's `allowedRedirectUrls`." }),
  code_challenge: codeChallenge.meta({
    description: 'BASE64URL(SHA-256(code_verifier)) of a verifier the application keeps (PKCE, S256).',
  }),
  code_challenge_method: z.literal('S256').optional(),
});

const callbackQuery = z.looseObject({
  state: z.string().max(512).optional(),
  code: z.string().max(4096).optional(),
  error: z.string().max(512).optional(),
});

const redirect = (description: string) => ({
  status: 302,
  description,
  headers: { Location: { description: 'Where the browser goes next.', schema: z.string() } },
});

export const identity = z.object({
  id: z.uuid(),
  provider: z.string().meta({ description: 'The provider id.' }),
  subject: z.string().meta({ description: "The user's id at the provider." }),
  email: z.string().nullable().meta({ description: 'The address the provider gave at the last sign-in.' }),
  createdAt: timestamp,
  lastSignInAt: timestamp,
});

const operations = {
  providerAuthorize: {
    method: 'get',
    path: '/providers/:id/authorize',
    summary: 'Sign in with an identity provider',
    description:
      "A browser navigation: 302 to the provider's sign-in page (authorization code with PKCE, `state`, and a `nonce` for OpenID Connect). `redirect_to` must equal one of the provider's `allowedRedirectUrls` exactly, or 400 `AUTH_REDIRECT_NOT_ALLOWED`. Limited to 60 a minute per client IP, with the code exchanges.",
    headers: z.object({}),
    params: providerParams,
    query: authorizeQuery,
    success: redirect("To the provider's authorization endpoint."),
    errors: [...common, 'AUTH_PROVIDER_NOT_FOUND', 'AUTH_REDIRECT_NOT_ALLOWED', 'AUTH_PROVIDER_UNAVAILABLE', 'RATE_LIMIT_EXCEEDED'],
  },
  providerCallback: {
    method: 'get',
    path: '/providers/:id/callback',
    summary: "The provider's redirect back",
    description:
      "Register `{PUBLIC_URL}/auth/providers/{id}/callback` at the provider. Checks `state`, exchanges the provider's code and validates its answer (ID token: issuer, audience, nonce, expiry, signature; or the user endpoint), then 302 to `redirect_to` with a one-time `code` (valid 2 minutes). A refusal after the state checked out goes to `redirect_to` too, with `error` (an error code: `AUTH_PROVIDER_RESPONSE_INVALID`, `AUTH_PROVIDER_LINK_UNVERIFIED`, `AUTH_PROVIDER_UNAVAILABLE`, `AUTH_USER_DISABLED`) and `error_description`. A missing, unknown, expired or used `state` is a 400 here.",
    headers: z.object({}),
    params: providerParams,
    query: callbackQuery,
    success: redirect('To `redirect_to`, with `code` or with `error` and `error_description`.'),
    errors: [
      'VALIDATION_ERROR',
      'AUTH_PROVIDER_STATE_INVALID',
      'AUTH_NOT_CONFIGURED',
      'AUTH_PROVIDER_NOT_FOUND',
      'AUTH_REDIRECT_NOT_ALLOWED',
      ...ANY_REQUEST_ERRORS,
    ],
  },
  providerToken: {
    method: 'post',
    path: '/providers/token',
    summary: 'Exchange the one-time code of a provider sign-in',
    description:
      'The `code` from `redirect_to` and the PKCE `codeVerifier` whose challenge the sign-in began with: a token pair (`amr: ["fed"]`). A code works once; a wrong verifier uses it up.',
    headers: projectHeaders,
    body: providerTokenBody,
    success: {
      status: 200,
      description:
        'A token pair; for a user with an active second factor, `{mfaRequired: true, mfaToken, factors}` instead (finish with `POST /auth/mfa/challenge` or a passkey, as after a password login).',
      schema: z.union([tokenPair, mfaRequiredResponse]),
    },
    errors: [
      ...common,
      ...JSON_BODY_ERRORS,
      'AUTH_INVALID_CODE',
      'AUTH_USER_DISABLED',
      'RATE_LIMIT_EXCEEDED',
      'AUTH_CLAIMS_FUNCTION_FAILED',
    ],
  },
  identities: {
    method: 'get',
    path: '/identities',
    summary: "The user's provider identities",
    description: 'Each provider account that signs this user in.',
    security: 'accessToken',
    headers: projectHeaders,
    success: { status: 200, description: 'The identities, oldest first.', schema: z.object({ identities: z.array(identity) }) },
    errors: [...common, ...ACCESS_TOKEN],
  },
  unlinkIdentity: {
    method: 'delete',
    path: '/identities/:id',
    summary: 'Remove one of your identities',
    description: 'Never the last way to sign in: without a password, the only identity stays (409 `AUTH_LAST_SIGN_IN_METHOD`).',
    security: 'accessToken',
    headers: projectHeaders,
    params: z.object({ id: z.uuid({ message: 'must be an identity id' }) }),
    success: { status: 204, description: 'Removed.' },
    errors: [...common, ...ACCESS_TOKEN, 'IDENTITY_NOT_FOUND', 'AUTH_LAST_SIGN_IN_METHOD', 'AUTH_IMPERSONATION_FORBIDDEN'],
  },
} satisfies Record<string, Operation>;

export const providersApi = {
  tag: 'Identity providers',
  description:
    'Sign-in with an OpenID Connect or GitHub-style OAuth 2.0 provider configured on the environment (`providers` in its settings), and the identities it links to a user.',
  mount: '/auth',
  aliases: [],
  operations,
} satisfies OperationGroup;
