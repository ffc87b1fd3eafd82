import { z } from 'zod';

// Request bodies of the MFA and passkey endpoints (unknown fields are ignored; wrong types are 400s).
// WebAuthn fields are bounded and must be base64url before any of them is decoded: garbage is a
// 400 at the door, and no field can make the verification work on more than a few kilobytes.

const b64url = (max: number) =>
  z
    .string()
    .min(1, 'is required')
    .max(max, `must be at most ${max} characters`)
    .regex(/^[A-Za-z0-9_-]+$/, 'must be base64url');

const name = z.string().trim().min(1).max(100, 'must be at most 100 characters').nullish();

const credentialCommon = {
  id: b64url(1400),
  rawId: b64url(1400),
  type: z.literal('public-key', { message: 'must be public-key' }),
  authenticatorAttachment: z.enum(['platform', 'cross-platform']).optional().catch(undefined),
  // Browser-reported extension outputs: not used; bounded by the body limit.
  clientExtensionResults: z.record(z.string(), z.unknown()).optional().default({}),
};

/** What `navigator.credentials.create()` gave, as JSON (@simplewebauthn/browser's `startRegistration`). */
export const registrationResponse = z.object({
  ...credentialCommon,
  response: z.object({
    clientDataJSON: b64url(4096),
    attestationObject: b64url(32_768),
    transports: z.array(z.string().max(32)).max(10).optional(),
  }),
});

/** What `navigator.credentials.get()` gave, as JSON (`startAuthentication`). */
export const authenticationResponse = z.object({
  ...credentialCommon,
  response: z.object({
    clientDataJSON: b64url(4096),
    authenticatorData: b64url(4096),
    signature: b64url(1400),
    userHandle: b64url(256).optional(),
  }),
});

const mfaToken = z
  .string()
  .min(1, 'is required')
  .max(100, 'is too long')
  .meta({ description: 'From the login answer `{mfaRequired: true, mfaToken, factors}`; 5 minutes, single use.' });

export const totpEnrollBody = z.object({ name });
export const totpVerifyBody = z.object({
  factorId: z.uuid({ message: 'must be a factor id' }),
  code: z
    .string()
    .min(1, 'is required')
    .max(64, 'is too long')
    .meta({ description: 'The 6-digit code the app shows now.', examples: ['492039'] }),
});
export const challengeBody = z.object({
  mfaToken,
  factorId: z.uuid({ message: 'must be a factor id' }).optional().meta({ description: 'The TOTP factor; omit it with a recovery code.' }),
  code: z
    .string()
    .min(1, 'is required')
    .max(64, 'is too long')
    .meta({ description: 'A 6-digit TOTP code of the factor, or one of the recovery codes (`xxxxx-xxxxx`).', examples: ['492039'] }),
});
export const factorParams = z.object({ id: z.uuid({ message: 'must be a factor id' }) });

export const passkeyRegisterVerifyBody = z.object({ response: registrationResponse, name });
export const passkeyLoginOptionsBody = z.object({
  mfaToken: mfaToken
    .optional()
    .meta({ description: 'Present: the passkey is the second factor of this sign-in (its user’s passkeys are offered).' }),
});
export const passkeyLoginVerifyBody = z.object({
  response: authenticationResponse,
  mfaToken: mfaToken.optional().meta({ description: 'The same mfaToken as the options, when the passkey is the second factor.' }),
});
