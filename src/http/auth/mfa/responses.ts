import { z } from 'zod';
import { timestamp } from '../../timestamp.js';
import { tokenPair } from '../responses.js';

// What the MFA and passkey endpoints answer, as schemas for the API reference (and the contract tests).

export const factor = z.object({
  id: z.uuid(),
  type: z.enum(['totp', 'webauthn']),
  name: z.string().nullable(),
  createdAt: timestamp,
  lastUsedAt: timestamp.nullable(),
});

const recoveryCodes = z
  .array(z.string())
  .meta({ description: 'Ten single-use codes (`xxxxx-xxxxx`), shown this once: each signs in instead of the second factor one time.' });

export const mfaRequiredResponse = z.object({
  mfaRequired: z.literal(true),
  mfaToken: z.string().meta({ description: 'For `POST /auth/mfa/challenge` (or a passkey): 5 minutes, single use, 5 tries.' }),
  factors: z.array(z.object({ id: z.uuid(), type: z.enum(['totp', 'webauthn']) })),
  deviceToken: z.string().optional().meta({
    description:
      'After a password login (not a provider sign-in): the device token, as a login without a second factor answers it — send it as `X-Device-Token` on later logins.',
  }),
});

export const totpEnrollResponse = z.object({
  factorId: z.uuid(),
  secret: z.string().meta({ description: 'The key in base32, for typing into an app; never shown again.' }),
  otpauthUrl: z
    .string()
    .meta({ examples: ['otpauth://totp/shop:ada%40example.com?issuer=shop&secret=…&algorithm=SHA1&digits=6&period=30'] }),
  qrSvg: z.string().meta({ description: 'The otpauth URL as a QR code (SVG).' }),
});

export const factorAddedResponse = z.object({
  factor,
  recoveryCodes: recoveryCodes.optional().meta({ description: "Present when this is the user's first factor." }),
});

export const factorsResponse = z.object({
  factors: z.array(factor),
  recoveryCodesLeft: z.int().min(0),
});

export const recoveryCodesResponse = z.object({ recoveryCodes });

// WebAuthn options as @simplewebauthn/server makes them (the W3C JSON forms): passed as they are
// to @simplewebauthn/browser's startRegistration / startAuthentication.
export const registrationOptionsResponse = z.looseObject({
  challenge: z.string(),
  rp: z.looseObject({ name: z.string(), id: z.string().optional() }),
  user: z.looseObject({ id: z.string(), name: z.string(), displayName: z.string() }),
  pubKeyCredParams: z.array(z.looseObject({ alg: z.number(), type: z.string() })),
});
export const authenticationOptionsResponse = z.looseObject({
  challenge: z.string(),
  rpId: z.string().optional(),
});

export const passkeyLoginResponse = tokenPair;
