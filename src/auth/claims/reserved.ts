// Claims a claims function may never set: those walgate vouches for (who, where, since when, how),
// the organization claims (org_*, set by an organization switch) and `act` (impersonation). A
// function that could set `sub` or `aal` could mint a token for anyone, or a second factor nobody
// gave; one that could set `org_role` could promote its user.

export const RESERVED_CLAIMS: ReadonlySet<string> = new Set([
  'iss',
  'sub',
  'aud',
  'exp',
  'iat',
  'nbf',
  'jti',
  'sid',
  'env',
  'aal',
  'amr',
  'act',
]);

export function isReservedClaim(name: string): boolean {
  return RESERVED_CLAIMS.has(name) || name.startsWith('org_');
}

/** The reserved keys among a function's result, in their order. */
export function reservedKeys(claims: Record<string, unknown>): string[] {
  return Object.keys(claims).filter(isReservedClaim);
}
