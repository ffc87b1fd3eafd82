import type { Queryable } from '../../core/db/pool.js';
import type { ActiveOrganization, ActiveOrganizationSource, Membership } from '../active-organization.js';
import type { Environment } from '../../projects/environments.js';
import { permissionsOf } from './roles.js';
import { activeMembership, activeMembershipSql } from './store.js';

// What sessions read of their active organization (wired in ../service.ts): the membership as it
// now stands, so a new role shows on the next refresh and a removed member's is gone.

function organization(env: Environment, id: string, membership: Membership | null): ActiveOrganization | undefined {
  if (!membership) return undefined;
  return {
    id,
    role: membership.role,
    permissions: permissionsOf(env.settings, membership.role) ?? [],
    membershipId: membership.membershipId,
  };
}

export function activeOrganizationSource(db: Queryable): ActiveOrganizationSource {
  return {
    membershipSql: activeMembershipSql,
    organization,
    lookup: async (env, id, userId) => organization(env, id, (await activeMembership(db, env, id, userId)) ?? null),
  };
}
