import type { ErrorCode } from '../../../core/errors.js';
import * as body from '../../../auth/mfa/schemas.js';
import { ANY_REQUEST_ERRORS, JSON_BODY_ERRORS, type Operation, type OperationGroup } from '../../operation.js';
import { projectHeaders } from '../../scope.js';
import { messageResponse, tokenPair } from '../responses.js';
import * as res from './responses.js';

// Second factors and passkeys under /auth, declared once for the router (routes.ts) and the reference.

const AUTH_SCOPE = ['VALIDATION_ERROR', 'AUTH_NOT_CONFIGURED'] as const satisfies readonly ErrorCode[];
const ACCESS_TOKEN = ['AUTH_TOKEN_INVALID', 'AUTH_TOKEN_EXPIRED'] as const satisfies readonly ErrorCode[];
const common = [...AUTH_SCOPE, ...ANY_REQUEST_ERRORS] as const;
const withBody = [...common, ...JSON_BODY_ERRORS] as const;
/** Enrolment and the factor list accept a first-factor token even where `mfa` is `required`. */
const enrolment = { security: 'accessToken', headers: projectHeaders } as const;
/** Everything else protected: `required` environments refuse tokens without a second factor (403). */
const secondFactor = [...ACCESS_TOKEN, 'AUTH_MFA_REQUIRED'] as const;
/** Once a user has a factor, adding another needs an aal2 session begun within `mfaReauthSeconds` (403 otherwise). */
const RECENT_SECOND_FACTOR =
  ' The first factor may be added with any token; once the user has one, this needs a token of a session that signed in with a second factor (`aal2`) within the setting `mfaReauthSeconds` (15 minutes), else `403 AUTH_MFA_REQUIRED`.';

const operations = {
  totpEnroll: {
    ...enrolment,
    method: 'post',
    path: '/mfa/totp/enroll',
    summary: 'Start enrolling an authenticator app (TOTP)',
    description:
      'A new secret (SHA-1, 6 digits, 30 s), its `otpauth://` URL and a QR code of it: the only time the secret is shown. The factor is pending until `POST /auth/mfa/totp/verify` sees a code of it. The body is optional.' +
      RECENT_SECOND_FACTOR,
    body: body.totpEnrollBody,
    bodyRequired: false,
    success: { status: 200, description: 'The pending factor and its secret.', schema: res.totpEnrollResponse },
    errors: [...withBody, ...secondFactor, 'AUTH_IMPERSONATION_FORBIDDEN'],
  },
  totpVerify: {
    ...enrolment,
    method: 'post',
    path: '/mfa/totp/verify',
    summary: 'Activate an authenticator app with a code',
    description:
      "A right code activates the factor; the user's first factor comes with ten recovery codes, shown once. Guesses are limited per user. The user is told by e-mail." +
      RECENT_SECOND_FACTOR,
    body: body.totpVerifyBody,
    success: { status: 200, description: 'Active.', schema: res.factorAddedResponse },
    errors: [
      ...withBody,
      ...secondFactor,
      'AUTH_INVALID_CODE',
      'MFA_FACTOR_NOT_FOUND',
      'RATE_LIMIT_EXCEEDED',
      'AUTH_IMPERSONATION_FORBIDDEN',
    ],
  },
  listFactors: {
    ...enrolment,
    method: 'get',
    path: '/mfa/factors',
    summary: "The user's active factors",
    success: {
      status: 200,
      description: 'The factors (never a secret) and how many recovery codes are unused.',
      schema: res.factorsResponse,
    },
    errors: [...common, ...ACCESS_TOKEN],
  },
  deleteFactor: {
    ...enrolment,
    method: 'delete',
    path: '/mfa/factors/:id',
    summary: 'Remove a factor',
    description:
      'Needs a session that signed in with a second factor (`aal2`) within the setting `mfaReauthSeconds` (15 minutes). Removing the last factor removes the recovery codes too. The user is told by e-mail.',
    params: body.factorParams,
    success: { status: 200, description: 'Removed.', schema: messageResponse },
    errors: [...common, ...secondFactor, 'MFA_FACTOR_NOT_FOUND', 'AUTH_IMPERSONATION_FORBIDDEN'],
  },
  regenerateRecoveryCodes: {
    ...enrolment,
    method: 'post',
    path: '/mfa/recovery-codes',
    summary: 'A new set of recovery codes',
    description: 'Ten new codes replace every earlier one. Needs an `aal2` session begun within the setting `mfaReauthSeconds`. No body.',
    bodyRequired: false,
    success: { status: 200, description: 'The new codes, shown once.', schema: res.recoveryCodesResponse },
    errors: [...withBody, ...secondFactor, 'AUTH_IMPERSONATION_FORBIDDEN'],
  },
  mfaChallenge: {
    method: 'post',
    path: '/mfa/challenge',
    summary: 'Finish a login with a second factor',
    description:
      'After a login answered `{mfaRequired: true, mfaToken, factors}`: a TOTP code of one of the factors (each code works once; one step of clock drift either way), or a recovery code (no `factorId` needed). An mfaToken lives 5 minutes, is single use and gives 5 tries; guesses are also limited per user and per client.',
    headers: projectHeaders,
    body: body.challengeBody,
    success: { status: 200, description: 'The token pair (`amr` has `otp` or `recovery`, `aal` is `aal2`).', schema: tokenPair },
    errors: [
      ...withBody,
      'AUTH_INVALID_CODE',
      'AUTH_TOKEN_INVALID',
      'AUTH_USER_DISABLED',
      'RATE_LIMIT_EXCEEDED',
      'AUTH_CLAIMS_FUNCTION_FAILED',
    ],
  },
  passkeyRegisterOptions: {
    ...enrolment,
    method: 'post',
    path: '/passkeys/register/options',
    summary: 'Options to create a passkey',
    description:
      "For `navigator.credentials.create()` (or `startRegistration({optionsJSON})` of @simplewebauthn/browser): a discoverable credential for this environment's relying party (setting `webauthn`). The challenge is valid 5 minutes, once. No body." +
      RECENT_SECOND_FACTOR,
    bodyRequired: false,
    success: { status: 200, description: 'PublicKeyCredentialCreationOptionsJSON.', schema: res.registrationOptionsResponse },
    errors: [...withBody, ...secondFactor, 'AUTH_IMPERSONATION_FORBIDDEN'],
  },
  passkeyRegisterVerify: {
    ...enrolment,
    method: 'post',
    path: '/passkeys/register/verify',
    summary: 'Register the passkey the browser created',
    description:
      "`response` is the browser's answer as JSON. The user's first factor comes with ten recovery codes. The user is told by e-mail." +
      RECENT_SECOND_FACTOR,
    body: body.passkeyRegisterVerifyBody,
    success: { status: 200, description: 'Registered.', schema: res.factorAddedResponse },
    errors: [...withBody, ...secondFactor, 'AUTH_INVALID_CODE', 'AUTH_IMPERSONATION_FORBIDDEN'],
  },
  passkeyLoginOptions: {
    method: 'post',
    path: '/passkeys/login/options',
    summary: 'Options to sign in with a passkey',
    description:
      "For `navigator.credentials.get()`: without a body, any passkey of the site signs in (passwordless); with the `mfaToken` of a login, the user's passkeys serve as the second factor.",
    headers: projectHeaders,
    body: body.passkeyLoginOptionsBody,
    bodyRequired: false,
    success: { status: 200, description: 'PublicKeyCredentialRequestOptionsJSON.', schema: res.authenticationOptionsResponse },
    errors: [...withBody, 'AUTH_TOKEN_INVALID', 'RATE_LIMIT_EXCEEDED'],
  },
  passkeyLoginVerify: {
    method: 'post',
    path: '/passkeys/login/verify',
    summary: 'Sign in with the passkey assertion',
    description:
      'Passwordless: the pair with `amr: ["webauthn"]` and `aal2` (the authenticator must verify its user). With an `mfaToken`: `amr: ["pwd","webauthn"]`. An assertion whose signature counter did not move past the stored one is refused, and every challenge is answered once.',
    headers: projectHeaders,
    body: body.passkeyLoginVerifyBody,
    success: { status: 200, description: 'The token pair.', schema: res.passkeyLoginResponse },
    errors: [
      ...withBody,
      'AUTH_INVALID_CODE',
      'AUTH_TOKEN_INVALID',
      'AUTH_USER_DISABLED',
      'RATE_LIMIT_EXCEEDED',
      'AUTH_CLAIMS_FUNCTION_FAILED',
    ],
  },
} satisfies Record<string, Operation>;

export const mfaApi = {
  tag: 'Multi-factor authentication',
  description:
    'Authenticator apps (TOTP), passkeys (WebAuthn, as a second factor and as a passwordless sign-in) and recovery codes. A login of a user with an active factor answers `{mfaRequired: true, mfaToken, factors}` instead of tokens; tokens carry `amr` and `aal`. With the environment setting `mfa: "required"`, tokens without a second factor only enrol, list factors and log out.',
  mount: '/auth',
  aliases: [],
  operations,
} satisfies OperationGroup;
