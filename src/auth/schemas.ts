import { z } from 'zod';

// Request bodies of the auth endpoints (unknown fields are ignored; wrong types are 400s).

export const email = z
  .string()
  .trim()
  .toLowerCase()
  .pipe(z.email({ message: 'must be an e-mail address' }).max(254, 'must be at most 254 characters'))
  .meta({ description: 'An e-mail address (at most 254 characters; trimmed and lower-cased).', examples: ['ada@example.com'] });

// Length rules are the password policy's (with its violations); this only bounds the input.
const password = z
  .string()
  .min(1, 'is required')
  .max(4096, 'is far too long')
  .meta({
    description: 'Policy: 8-256 characters, a zxcvbn-ts score of at least 3 of 4, not containing the e-mail local part.',
    examples: ['correct horse battery staple'],
  });
const code = z
  .string()
  .min(1, 'is required')
  .max(64, 'is too long')
  .meta({ description: 'The 6-digit code from the e-mail.', examples: ['123456'] });

export const signupBody = z.object({
  email,
  password,
  name: z.string().trim().max(200, 'must be at most 200 characters').nullish(),
});
export const confirmSignupBody = z.object({ email, code });
export const loginBody = z.object({ email, password });
export const recoverPasswordBody = z.object({ email });
export const resetPasswordBody = z.object({ email, code, newPassword: password });
export const refreshTokenBody = z.object({ refreshToken: z.string().min(1, 'is required').max(512, 'is too long') });

// Clients that cannot send headers (a JWKS URL in a verifier's config) name the project in the query.
export const jwksQuery = z.object({
  projectId: z.string().optional().meta({ description: 'Instead of the X-Project-Id header.' }),
  environment: z.string().optional().meta({ description: 'Instead of the environment header.' }),
});

export const logoutBody = z.object({
  scope: z
    .enum(['local', 'others', 'global'])
    .default('local')
    .meta({ description: '`local`: this session; `others`: every other session of the user; `global`: all of them.' }),
});
export const sessionParams = z.object({ id: z.uuid({ message: 'must be a session id' }) });

/** RFC 7636 §4.1: a PKCE code verifier is 43-128 unreserved characters. */
const codeVerifier = z
  .string()
  .regex(/^[A-Za-z0-9\-._~]{43,128}$/, 'must be 43-128 characters of A-Z a-z 0-9 - . _ ~ (RFC 7636)')
  .meta({ description: 'The PKCE verifier whose S256 challenge the sign-in began with.' });

/** POST /auth/providers/token: the one-time code of a provider sign-in and the PKCE verifier of its challenge. */
export const providerTokenBody = z.strictObject({
  code: z.string().min(1).max(512).meta({ description: 'The `code` the application received at `redirect_to`.' }),
  codeVerifier,
});
