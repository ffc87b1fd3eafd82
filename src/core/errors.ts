import type { ZodError } from 'zod';

// The one error model: a closed set of codes, each with its HTTP status and a default message.
// Every failure a client sees is `{ error: CODE, message, ...extra }`.

export const ERRORS = {
  VALIDATION_ERROR: [400, 'The request is not valid.'],
  AUTH_INVALID_CODE: [400, 'The code is wrong, expired or used up.'],
  AUTH_INVALID_CREDENTIALS: [401, 'Wrong e-mail or password.'],
  AUTH_TOKEN_EXPIRED: [401, 'The access token has expired.'],
  AUTH_TOKEN_INVALID: [401, 'The token is missing, malformed, revoked or tampered with.'],
  AUTH_EMAIL_NOT_VERIFIED: [403, 'The e-mail address has not been confirmed yet.'],
  AUTH_USER_DISABLED: [403, 'This account has been disabled.'],
  AUTH_MFA_REQUIRED: [403, 'This environment requires a second factor: enrol one, then sign in with it.'],
  FORBIDDEN: [403, 'This token does not give access to this project.'],
  AUTH_NOT_CONFIGURED: [404, 'Authentication is not enabled for this project and environment.'],
  WEBHOOK_NOT_FOUND: [404, 'No webhook with this id in this project and environment.'],
  DELIVERY_NOT_FOUND: [404, 'No delivery with this id for this webhook.'],
  GAP_NOT_FOUND: [404, 'No capture gap with this id touches this project and environment.'],
  REPLAY_NOT_FOUND: [404, 'No replay with this id for this webhook.'],
  NOT_FOUND: [404, 'No such route.'],
  SESSION_NOT_FOUND: [404, 'No live session with this id among yours.'],
  MFA_FACTOR_NOT_FOUND: [404, 'No factor with this id among yours.'],
  USER_NOT_FOUND: [404, 'No user with this id in this project and environment.'],
  METHOD_NOT_ALLOWED: [405, 'This method is not allowed on this route.'],
  AUTH_EMAIL_EXISTS: [409, 'This e-mail address is already registered.'],
  DELIVERY_NOT_FINISHED: [409, 'The delivery is pending or retrying; only a delivered or dead one can be retried.'],
  DELIVERY_NOT_HELD: [409, 'The delivery is not a dead letter holding its row (onDead "hold"): there is nothing to discard.'],
  DELIVERY_PAYLOAD_GONE: [
    409,
    'The change this delivery carried is no longer stored (not kept with WEBHOOK_KEEP_PAYLOADS=false, or past retention): it cannot be sent again.',
  ],
  REQUEST_TIMEOUT: [408, 'The request (its headers and body) was not received within the deadline.'],
  PAYLOAD_TOO_LARGE: [413, 'The request body is too large.'],
  UNSUPPORTED_MEDIA_TYPE: [415, 'The request body must be application/json.'],
  AUTH_ACCOUNT_LOCKED: [423, 'Too many failed logins; the account is locked for a while.'],
  RATE_LIMIT_EXCEEDED: [429, 'Too many requests; retry later.'],
  INTERNAL_ERROR: [500, 'Something went wrong on our side.'],
  SERVICE_UNAVAILABLE: [503, 'A dependency is unavailable; retry later.'],
  // Sign-in with an identity provider (docs/providers.md).
  AUTH_PROVIDER_NOT_FOUND: [404, 'No identity provider with this id in this project and environment.'],
  AUTH_REDIRECT_NOT_ALLOWED: [400, "redirect_to is not one of the provider's allowed redirect URLs (the match is exact)."],
  AUTH_PROVIDER_STATE_INVALID: [400, 'The sign-in state is missing, unknown, expired or already used: start the sign-in again.'],
  AUTH_PROVIDER_RESPONSE_INVALID: [401, "The identity provider's answer could not be verified."],
  AUTH_PROVIDER_LINK_UNVERIFIED: [
    409,
    'An account with this e-mail address exists, and the provider or the account has not verified the address: nothing was linked. Sign in with the password (and verify the address) first.',
  ],
  AUTH_PROVIDER_UNAVAILABLE: [502, 'The identity provider could not be reached or answered unexpectedly.'],
  IDENTITY_NOT_FOUND: [404, 'No identity with this id among yours.'],
  AUTH_LAST_SIGN_IN_METHOD: [409, 'This is your last way to sign in: add a password or another identity first.'],
  // A GraphQL request that is not one (no query, variables that are not an object): the client's mistake.
  GRAPHQL_BAD_REQUEST: [400, 'The GraphQL request is not valid: it needs a `query` string, and `variables` must be an object.'],
  BACKFILL_NOT_FOUND: [404, 'No backfill with this id for this webhook.'],
  // Custom claims (docs/claims.md): the environment's claims function failed, so no token was issued.
  // 502 like AUTH_PROVIDER_UNAVAILABLE: the request was right, code the environment's operators
  // installed (not walgate, not the client) answered wrongly; `function` and `reason` say which and how.
  AUTH_CLAIMS_FUNCTION_FAILED: [502, "The environment's claims function failed: no token was issued."],
  // Impersonation (docs/admin-api.md): an operator's session as the user cannot change how the user signs in.
  AUTH_IMPERSONATION_FORBIDDEN: [403, "An impersonation session cannot change the user's password, e-mail, second factors or identities."],
  AUTH_PASSWORDLESS_DISABLED: [403, 'Passwordless sign-in is not enabled for this environment.'],
  BACKFILL_RUNNING: [409, 'This webhook already has a backfill running: cancel it or wait for it to finish.'],
  // Organizations (docs/organizations.md).
  ORGANIZATION_NOT_FOUND: [404, 'No organization with this id among yours in this project and environment.'],
  ORGANIZATION_FORBIDDEN: [403, 'Your role in this organization does not allow this.'],
  ORGANIZATION_MEMBER_NOT_FOUND: [404, 'No member with this user id in this organization.'],
  ORGANIZATION_MEMBER_EXISTS: [409, 'This user is already a member of the organization.'],
  ORGANIZATION_LAST_OWNER: [409, 'An organization keeps at least one owner: make another member an owner first.'],
  ORGANIZATION_LIMIT_REACHED: [409, 'A limit of the environment is reached (organizations per user, or members per organization).'],
  INVITATION_INVALID: [400, 'The invitation is unknown, expired, already used, revoked, or for another e-mail address.'],
  INVITATION_NOT_FOUND: [404, 'No pending invitation with this id in this organization.'],
  // Broker destinations (docs/destinations.md).
  DESTINATION_NOT_FOUND: [404, 'No destination with this id in this project and environment.'],
  DESTINATION_IN_USE: [409, 'Subscriptions deliver to this destination: delete them or move them to another first.'],
} as const satisfies Record<string, readonly [number, string]>;

export type ErrorCode = keyof typeof ERRORS;

export interface Violation {
  path: string;
  message: string;
}

export class AppError extends Error {
  override name = 'AppError';
  readonly status: number;

  constructor(
    readonly code: ErrorCode,
    message?: string,
    readonly extra: Record<string, unknown> = {},
    readonly headers: Record<string, string> = {},
  ) {
    super(message ?? ERRORS[code][1]);
    this.status = ERRORS[code][0];
  }

  toBody(): Record<string, unknown> {
    return { error: this.code, message: this.message, ...this.extra };
  }
}

export function validationError(violations: Violation[], message?: string): AppError {
  return new AppError('VALIDATION_ERROR', message, { violations });
}

export function violationsOf(err: ZodError): Violation[] {
  return err.issues.map((issue) => ({
    path: issue.path.map(String).join('.') || '(body)',
    message: issue.message,
  }));
}

export function rateLimited(retryAfterSeconds: number): AppError {
  const seconds = Math.max(1, Math.ceil(retryAfterSeconds));
  return new AppError('RATE_LIMIT_EXCEEDED', undefined, { retryAfter: seconds }, { 'Retry-After': String(seconds) });
}
