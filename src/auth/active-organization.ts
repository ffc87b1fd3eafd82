import type { RevocationStore } from '../core/store/revocations.js';
import type { Environment } from '../projects/environments.js';

// The organization a session acts for, as access tokens carry it. Sessions know only this shape;
// the organizations capability (src/auth/organizations/) decides what it holds, and hands the
// session service its source (wired in service.ts), so sessions never import organizations.

export interface ActiveOrganization {
  id: string;
  role: string;
  permissions: readonly string[];
  /** The membership's id: removing the member revokes it, and with it every token naming it. */
  membershipId: string;
}

/** A live membership as Postgres holds it. */
export interface Membership {
  membershipId: string;
  role: string;
}

/** SQL expressions naming, in the asker's statement, the organization, the user and the environment. */
export interface MembershipColumns {
  organization: string;
  user: string;
  project: string;
  environment: string;
}

/** What sessions ask of the organizations capability about a session's active organization. */
export interface ActiveOrganizationSource {
  /**
   * A query of at most one row (`membership_id`, `role`): the membership as it stands now, none
   * when removed or the organization deleted. A refresh reads it in the same statement as its
   * token exchange (sessions/store.ts): one round trip, as without an organization.
   */
  membershipSql(columns: MembershipColumns): string;
  /** The organization as tokens carry it, from that membership; undefined without one. */
  organization(env: Environment, organizationId: string, membership: Membership | null): ActiveOrganization | undefined;
  /** The same, read on its own (the rarer paths: a refresh within the reuse grace). */
  lookup(env: Environment, organizationId: string, userId: string): Promise<ActiveOrganization | undefined>;
}

/** The claims of an organization in an access token (reserved: nothing else may set an `org_*` claim). */
export interface OrganizationClaims {
  org_id: string;
  org_role: string;
  org_permissions: string[];
  org_mid: string;
}

/**
 * Bounded whatever the settings hold: the environment allows 32 permissions of at most 48
 * characters (settings.ts), so at most about 1.7 KB; the cut here only guards against a stored
 * document that bypassed the schema.
 */
const MAX_PERMISSIONS = 32;

export function organizationClaims(org: ActiveOrganization): OrganizationClaims {
  return {
    org_id: org.id,
    org_role: org.role,
    org_permissions: org.permissions.slice(0, MAX_PERMISSIONS).map((p) => p.slice(0, 48)),
    org_mid: org.membershipId,
  };
}

/**
 * Whether a token is refused by the revocation list: its session was ended, or — for a token that
 * carries an organization — its membership was removed. Both questions are asked at once (the
 * Postgres list answers them in one statement).
 */
export async function isTokenRevoked(revocations: RevocationStore, claims: { sid: string; org_mid?: string }): Promise<boolean> {
  if (!claims.org_mid) return revocations.isRevoked(claims.sid);
  const [session, membership] = await Promise.all([revocations.isRevoked(claims.sid), revocations.isRevoked(claims.org_mid)]);
  return session || membership;
}
