import { z } from 'zod';
import { email } from '../schemas.js';

// Request bodies of passwordless sign-in (unknown fields ignored; wrong types are 400s).

const code = z
  .string()
  .min(1, 'is required')
  .max(64, 'is too long')
  .meta({ description: 'The 6-digit code from the e-mail.', examples: ['123456'] });

export const otpBody = z.object({ email });
export const otpVerifyBody = z.object({ email, code });
export const magicLinkBody = z.object({
  email,
  redirectTo: z
    .string()
    .max(2000, 'is too long')
    .meta({ description: "Where the link leads: exactly one of the environment's `passwordless.redirectUrls`." }),
});
export const magicLinkVerifyBody = z.object({
  token: z
    .string()
    .min(1, 'is required')
    .max(200, 'is too long')
    .meta({ description: 'The `token` query parameter the link carried to the redirect page.' }),
});
