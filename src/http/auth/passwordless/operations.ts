import { z } from 'zod';
import type { ErrorCode } from '../../../core/errors.js';
import { ANY_REQUEST_ERRORS, JSON_BODY_ERRORS, type Operation, type OperationGroup } from '../../operation.js';
import { projectHeaders } from '../../scope.js';
import { mfaRequiredResponse } from '../mfa/responses.js';
import { loginResponse, messageResponse } from '../responses.js';
import * as body from '../../../auth/passwordless/schemas.js';

// Passwordless sign-in (docs/passwordless.md), declared once for the router (routes.ts) and the reference.

const AUTH_SCOPE = ['VALIDATION_ERROR', 'AUTH_NOT_CONFIGURED'] as const satisfies readonly ErrorCode[];
const withBody = [...AUTH_SCOPE, ...ANY_REQUEST_ERRORS, ...JSON_BODY_ERRORS, 'AUTH_PASSWORDLESS_DISABLED'] as const;
const signInErrors = [
  ...withBody,
  'AUTH_INVALID_CODE',
  'RATE_LIMIT_EXCEEDED',
  'AUTH_USER_DISABLED',
  'AUTH_CLAIMS_FUNCTION_FAILED',
] as const;

const headers = projectHeaders.extend({
  'x-device-token': z.string().max(200).optional().meta({ description: 'The `deviceToken` of an earlier sign-in.' }),
});

const signedIn = {
  status: 200,
  description:
    'A token pair and a device token, as a password login answers; for a user with an active second factor, `{mfaRequired: true, mfaToken, factors, deviceToken}` instead (finish with `POST /auth/mfa/challenge` or a passkey).',
  schema: z.union([loginResponse, mfaRequiredResponse]),
} as const;

const operations = {
  otp: {
    method: 'post',
    path: '/otp',
    summary: 'E-mail a sign-in code',
    description:
      "The same answer, at once, whether or not the address can sign in; a 6-digit code (valid 10 minutes, 5 attempts, in the subject line too) is e-mailed if it can — or, where the environment's `passwordless.signUp` is on, to a new account. Limited like recover-password: 5 a minute per address, 20 per client IP.",
    headers: projectHeaders,
    body: body.otpBody,
    success: { status: 200, description: 'Always.', schema: messageResponse },
    errors: [...withBody, 'RATE_LIMIT_EXCEEDED'],
  },
  otpVerify: {
    method: 'post',
    path: '/otp/verify',
    summary: 'Sign in with the e-mailed code',
    description:
      'A right code signs the user in (amr `otp` + `email`) and confirms the address; a user with a second factor gets the MFA step. Limited like reset-password: 20 a minute per client IP, 10 per address and client IP; each code takes 5 guesses.',
    headers,
    body: body.otpVerifyBody,
    success: signedIn,
    errors: signInErrors,
  },
  magicLink: {
    method: 'post',
    path: '/magic-link',
    summary: 'E-mail a sign-in link',
    description:
      "`redirectTo` must be exactly one of the environment's `passwordless.redirectUrls` (else 400 `AUTH_REDIRECT_NOT_ALLOWED`, for any address). Then the same answer, at once, whether or not the address can sign in; the e-mailed link is `redirectTo` with a single-use `token` query parameter (valid 10 minutes). Limited like recover-password.",
    headers: projectHeaders,
    body: body.magicLinkBody,
    success: { status: 200, description: 'Always (with an allowed redirectTo).', schema: messageResponse },
    errors: [...withBody, 'AUTH_REDIRECT_NOT_ALLOWED', 'RATE_LIMIT_EXCEEDED'],
  },
  magicLinkVerify: {
    method: 'post',
    path: '/magic-link/verify',
    summary: 'Sign in with the link’s token',
    description:
      'The page at `redirectTo` posts the `token` of its URL: once, within its lifetime, it signs the user in (amr `email`) and confirms the address; a user with a second factor gets the MFA step. A used, expired, unknown or another environment’s token is 400 `AUTH_INVALID_CODE`. Limited to 20 a minute per client IP.',
    headers,
    body: body.magicLinkVerifyBody,
    success: signedIn,
    errors: signInErrors,
  },
} satisfies Record<string, Operation>;

export const passwordlessApi = {
  tag: 'Passwordless sign-in',
  description:
    "An e-mailed 6-digit code or a magic link instead of a password, where the environment's `passwordless.enabled` setting allows it (403 `AUTH_PASSWORDLESS_DISABLED` otherwise).",
  mount: '/auth',
  aliases: [],
  operations,
} satisfies OperationGroup;
