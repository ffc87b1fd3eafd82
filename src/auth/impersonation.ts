import { AppError } from '../core/errors.js';
import type { AccessClaims } from './tokens.js';

// An operator's session as the user (users/impersonate.ts) sees what the user sees, but cannot
// change how the user signs in: password, e-mail, second factors, identities. Every route that
// changes one of those asks here first.

export function isImpersonation(claims: Pick<AccessClaims, 'amr'>): boolean {
  return claims.amr?.includes('impersonation') === true;
}

/** 403 AUTH_IMPERSONATION_FORBIDDEN for an impersonation session's token. */
export function refuseImpersonation(claims: Pick<AccessClaims, 'amr'>): void {
  if (isImpersonation(claims)) throw new AppError('AUTH_IMPERSONATION_FORBIDDEN');
}
