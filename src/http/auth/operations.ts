import { z } from 'zod';
import type { ErrorCode } from '../../core/errors.js';
import { ANY_REQUEST_ERRORS, JSON_BODY_ERRORS, type Operation, type OperationGroup } from '../operation.js';
import { projectHeaders } from '../scope.js';
import * as res from './responses.js';
import { mfaRequiredResponse } from './mfa/responses.js';
import * as body from '../../auth/schemas.js';
import { userMetadataBody } from '../../auth/users/metadata.js';

// The authentication API under /auth, declared once for the router (routes.ts) and the reference.

/** authEnvironment (src/http/scope.ts): bad project headers (400); unknown project, environment, or auth off (404). */
const AUTH_SCOPE = ['VALIDATION_ERROR', 'AUTH_NOT_CONFIGURED'] as const satisfies readonly ErrorCode[];

/** AuthService.authenticate: a revoked, tampered or missing token, or an expired one. */
const ACCESS_TOKEN = ['AUTH_TOKEN_INVALID', 'AUTH_TOKEN_EXPIRED'] as const satisfies readonly ErrorCode[];

/** A protected call other than logout: where `mfa` is `required`, a token without a second factor is 403 AUTH_MFA_REQUIRED. */
const PROTECTED = [...ACCESS_TOKEN, 'AUTH_MFA_REQUIRED'] as const satisfies readonly ErrorCode[];

const common = [...AUTH_SCOPE, ...ANY_REQUEST_ERRORS] as const;

const loginHeaders = projectHeaders.extend({
  'x-device-token': z.string().max(200).optional().meta({ description: 'The `deviceToken` of an earlier login or confirmation.' }),
});
const withBody = [...common, ...JSON_BODY_ERRORS] as const;

const operations = {
  signup: {
    method: 'post',
    path: '/signup',
    summary: 'Sign up',
    description:
      'Creates an unconfirmed account and e-mails a 6-digit code (valid 10 minutes, 5 attempts). Limited to 10 a minute per client IP.',
    headers: projectHeaders,
    body: body.signupBody,
    success: { status: 201, description: 'The account exists; the code is on its way.', schema: res.signupResponse },
    errors: [...withBody, 'AUTH_EMAIL_EXISTS', 'RATE_LIMIT_EXCEEDED'],
  },
  confirmSignup: {
    method: 'post',
    path: '/confirm-signup',
    summary: 'Confirm the e-mail address',
    description:
      'With the code from the sign-up e-mail: the address is verified and the user is logged in, through the same second-factor step as a login (the session\'s `amr` is `["email"]`). An address that is verified already is refused like a wrong code. Limited to 20 a minute per client IP and 10 per address; at most 10 wrong codes an hour per address, however many codes were sent.',
    headers: projectHeaders,
    body: body.confirmSignupBody,
    success: {
      status: 200,
      description:
        'Verified; a token pair, a device token and the user — or, for a user with an active second factor (an address an operator unverified), `{mfaRequired: true, mfaToken, factors}` instead.',
      schema: z.union([res.confirmSignupResponse, mfaRequiredResponse]),
    },
    errors: [...withBody, 'AUTH_INVALID_CODE', 'RATE_LIMIT_EXCEEDED', 'AUTH_USER_DISABLED', 'AUTH_CLAIMS_FUNCTION_FAILED'],
  },
  login: {
    method: 'post',
    path: '/login',
    summary: 'Log in',
    description:
      'Five failures from one client lock that client out of the account for 15 minutes (423 with `lockedUntil`); fifty from all clients together lock it for every client without a device token. A client that sends the `deviceToken` of an earlier login as `X-Device-Token` is judged by its own failures only. An unknown address is answered, counted and locked exactly like a wrong password. Limited to 20 a minute per client IP. Every number here is a setting of the environment.',
    headers: loginHeaders,
    body: body.loginBody,
    success: {
      status: 200,
      description:
        'A token pair and a device token; for a user with an active second factor, `{mfaRequired: true, mfaToken, factors}` instead (finish with `POST /auth/mfa/challenge` or a passkey).',
      schema: z.union([res.loginResponse, mfaRequiredResponse]),
    },
    errors: [
      ...withBody,
      'AUTH_INVALID_CREDENTIALS',
      'AUTH_EMAIL_NOT_VERIFIED',
      'AUTH_ACCOUNT_LOCKED',
      'RATE_LIMIT_EXCEEDED',
      'AUTH_USER_DISABLED',
      'AUTH_CLAIMS_FUNCTION_FAILED',
    ],
  },
  recoverPassword: {
    method: 'post',
    path: '/recover-password',
    summary: 'Ask for a password reset code',
    description:
      'The same answer whether or not the address is registered; a code is e-mailed if it is. Limited to 5 a minute per address and 20 per client IP.',
    headers: projectHeaders,
    body: body.recoverPasswordBody,
    success: { status: 200, description: 'Always.', schema: res.messageResponse },
    errors: [...withBody, 'RATE_LIMIT_EXCEEDED'],
  },
  resetPassword: {
    method: 'post',
    path: '/reset-password',
    summary: 'Reset the password',
    description:
      'With the code from the recovery e-mail. Ends the lockout and every session of the user. A weak new password is a 400 `VALIDATION_ERROR` with the reasons (the code stays usable). Limited to 20 a minute per client IP and 10 per address; at most 10 wrong codes an hour per address.',
    headers: projectHeaders,
    body: body.resetPasswordBody,
    success: { status: 200, description: 'The password is changed.', schema: res.messageResponse },
    errors: [...withBody, 'AUTH_INVALID_CODE', 'RATE_LIMIT_EXCEEDED'],
  },
  refreshToken: {
    method: 'post',
    path: '/refresh-token',
    summary: 'Exchange a refresh token',
    description:
      'Single use, with a grace: presented again within 10 seconds of its first use (concurrent tabs, a retried request) it gives another working pair of the same session; after that, reuse revokes the whole session, access tokens included. Limited to 300 a minute per client IP.',
    headers: projectHeaders,
    body: body.refreshTokenBody,
    success: { status: 200, description: 'A new token pair.', schema: res.tokenPair },
    errors: [...withBody, 'AUTH_TOKEN_INVALID', 'RATE_LIMIT_EXCEEDED', 'AUTH_CLAIMS_FUNCTION_FAILED'],
  },
  resendConfirmation: {
    method: 'post',
    path: '/resend-confirmation',
    summary: 'Ask for a new sign-up code',
    description:
      'The same answer for any address; a new code (with fresh attempts) is e-mailed if the address awaits confirmation. Limited like recover-password.',
    headers: projectHeaders,
    body: body.recoverPasswordBody,
    success: { status: 200, description: 'Always.', schema: res.messageResponse },
    errors: [...withBody, 'RATE_LIMIT_EXCEEDED'],
  },
  sessions: {
    method: 'get',
    path: '/sessions',
    summary: "The user's live sessions",
    description: 'One per login still alive, on any device; `current` marks the one asking.',
    security: 'accessToken',
    headers: projectHeaders,
    success: { status: 200, description: 'The sessions, most recently used first.', schema: res.sessionsResponse },
    errors: [...common, ...PROTECTED],
  },
  endSession: {
    method: 'delete',
    path: '/sessions/:id',
    summary: 'End one of your sessions',
    description: 'Its refresh token and access tokens are refused from the next request on.',
    security: 'accessToken',
    headers: projectHeaders,
    params: body.sessionParams,
    success: { status: 200, description: 'Ended.', schema: res.messageResponse },
    errors: [...common, ...PROTECTED, 'SESSION_NOT_FOUND'],
  },
  logout: {
    method: 'post',
    path: '/logout',
    summary: 'Log out',
    description:
      'Revokes the session of the access token (`scope` `local`, the default), every other session of the user (`others`), or all of them (`global`): their refresh and access tokens are refused from the next request on. The body is optional.',
    security: 'accessToken',
    headers: projectHeaders,
    body: body.logoutBody,
    bodyRequired: false,
    success: { status: 200, description: 'Logged out.', schema: res.messageResponse },
    errors: [...withBody, ...ACCESS_TOKEN],
  },
  me: {
    method: 'get',
    path: '/me',
    summary: 'The current user and session',
    description:
      'Checks the revocation list, which a signature check alone cannot: resource servers ask here when a logout must take effect at once.',
    security: 'accessToken',
    headers: projectHeaders,
    success: { status: 200, description: 'The user and the session.', schema: res.meResponse },
    errors: [...common, ...PROTECTED],
  },
  updateMe: {
    method: 'patch',
    path: '/me',
    summary: "Set the current user's userMetadata",
    description: 'Replaces `userMetadata`, a JSON object of at most 16 KB (`appMetadata` is set by operators only, through the admin API).',
    security: 'accessToken',
    headers: projectHeaders,
    body: userMetadataBody,
    success: { status: 200, description: 'The user as it now is.', schema: res.meUserResponse },
    errors: [...withBody, ...PROTECTED],
  },
  jwks: {
    method: 'get',
    path: '/.well-known/jwks.json',
    summary: 'Public signing keys (JWKS)',
    description:
      'The keys that verify access tokens. Name the project with the headers or, for clients that cannot send headers, with `?projectId=&environment=`. Cache it (`Cache-Control: public, max-age=300`) and fetch again only for an unknown `kid`: the next key is published before it signs.',
    headers: projectHeaders.partial(),
    query: body.jwksQuery,
    success: {
      status: 200,
      description: 'The key set.',
      schema: res.jwksResponse,
      headers: { 'Cache-Control': { description: '`public, max-age=300`', schema: z.string() } },
    },
    errors: common,
  },
  openidConfiguration: {
    method: 'get',
    path: '/issuers/:projectId/:environment/.well-known/openid-configuration',
    summary: "An environment's issuer metadata (OpenID discovery)",
    description:
      "Access tokens name `{PUBLIC_URL}/auth/issuers/{projectId}/{environment}` as `iss`; this is that issuer's discovery document, so a resource server given only a token finds the key set (`jwks_uri`) with any standard OpenID library. Tokens issued before per-environment issuers (`iss` = `PUBLIC_URL`) are accepted until they expire.",
    headers: z.object({}),
    params: res.issuerParams,
    success: {
      status: 200,
      description: 'The discovery document.',
      schema: res.discoveryResponse,
      headers: { 'Cache-Control': { description: '`public, max-age=300`', schema: z.string() } },
    },
    errors: common,
  },
} satisfies Record<string, Operation>;

export const authApi = {
  tag: 'Authentication',
  description:
    'Sign-up with an e-mailed code, login, password recovery, single-use refresh tokens, logout checked on every request, and the public key set. Every request names the project (`X-Project-Id`) and the environment (`environment`, default `master`).',
  mount: '/auth',
  aliases: [],
  operations,
} satisfies OperationGroup;
