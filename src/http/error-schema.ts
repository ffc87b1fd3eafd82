import { z } from 'zod';
import { ERRORS, type ErrorCode } from '../core/errors.js';

// The error envelope `{ error, message, ...extra }` as a schema, per code, for the API reference.
// The extras are the ones errors.ts and the services attach: `violations` (validationError),
// `retryAfter` (rateLimited, with the Retry-After header), `lockedUntil` (the lockout).

const violation = z.object({
  path: z.string().meta({ description: 'The field, dotted (`events.0`), or `(body)`.' }),
  message: z.string(),
});

const EXTRAS: Partial<Record<ErrorCode, z.ZodRawShape>> = {
  VALIDATION_ERROR: { violations: z.array(violation).meta({ description: 'One entry per problem.' }) },
  AUTH_ACCOUNT_LOCKED: {
    lockedUntil: z.iso.datetime().meta({ description: 'When the lockout ends.', examples: ['2026-11-25T10:15:00.000Z'] }),
  },
  RATE_LIMIT_EXCEEDED: { retryAfter: z.int().min(1).meta({ description: 'Seconds to wait; also in the Retry-After header.' }) },
  DESTINATION_IN_USE: {
    subscriptions: z.array(z.string()).meta({ description: 'The ids of the subscriptions that deliver to it.' }),
  },
};

const EXAMPLE_EXTRAS: Partial<Record<ErrorCode, Record<string, unknown>>> = {
  VALIDATION_ERROR: { violations: [{ path: 'email', message: 'must be an e-mail address' }] },
  AUTH_ACCOUNT_LOCKED: { lockedUntil: '2026-11-22T10:15:00.000Z' },
  RATE_LIMIT_EXCEEDED: { retryAfter: 42 },
  DESTINATION_IN_USE: { subscriptions: ['wh_3f6c2a1e9b8d4c7e0a5b1d2c3e4f5a6b'] },
};

function envelope(code: ErrorCode) {
  return z.object({
    error: z.literal(code),
    message: z.string().meta({ description: 'For people; may change. Branch on `error`.' }),
    ...EXTRAS[code],
  });
}

/** The body of an error response carrying one of these codes. */
export function errorBodySchema(codes: readonly ErrorCode[]): z.ZodType {
  const [first, ...rest] = codes.map(envelope);
  if (!first) throw new Error('errorBodySchema needs at least one code');
  return rest.length ? z.discriminatedUnion('error', [first, ...rest]) : first;
}

/** What a client receives for this code (with the default message). */
export function errorExample(code: ErrorCode): Record<string, unknown> {
  return { error: code, message: ERRORS[code][1], ...EXAMPLE_EXTRAS[code] };
}

export function statusOf(code: ErrorCode): number {
  return ERRORS[code][0];
}
