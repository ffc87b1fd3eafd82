import { AppError, validationError } from '../../core/errors.js';
import type { Settings } from '../../projects/settings.js';

// Who may do what in an organization. Three roles are built in; an environment adds its own
// (settings `organizations.roles`), each with named permissions that its members' tokens carry and
// that the app interprets. Managing the organization itself stays with owners and admins.

export const OWNER = 'owner';

/** What the built-in roles' tokens carry in `org_permissions`. */
const BUILT_IN: Record<string, readonly string[]> = {
  owner: ['organization:update', 'organization:delete', 'members:invite', 'members:manage', 'owners:manage'],
  admin: ['organization:update', 'members:invite', 'members:manage'],
  member: [],
};

/** The permissions of a role in this environment; undefined for a role it does not define. */
export function permissionsOf(settings: Settings, role: string): readonly string[] | undefined {
  return BUILT_IN[role] ?? settings.organizations.roles.find((r) => r.name === role)?.permissions;
}

/** 400 VALIDATION_ERROR naming the roles there are, for a role this environment does not define. */
export function requireKnownRole(settings: Settings, role: string, path = 'role'): void {
  if (permissionsOf(settings, role)) return;
  const known = [...Object.keys(BUILT_IN), ...settings.organizations.roles.map((r) => r.name)];
  throw validationError([{ path, message: `is not a role of this environment (${known.join(', ')})` }]);
}

export type Action = 'update' | 'delete' | 'invite' | 'manageMembers';

const NEEDS: Record<Action, string> = {
  update: 'organization:update',
  delete: 'organization:delete',
  invite: 'members:invite',
  manageMembers: 'members:manage',
};

/** Only built-in roles manage the organization: an environment's own permissions are for the app. */
export function may(role: string, action: Action): boolean {
  return BUILT_IN[role]?.includes(NEEDS[action]) ?? false;
}

export function requireMay(role: string, action: Action): void {
  if (!may(role, action)) throw new AppError('ORGANIZATION_FORBIDDEN');
}

/**
 * A role change or an invitation by `actorRole`: owners grant any role; admins any but owner, and
 * never to (or from) an owner. `targetRole` is the member's current role, when there is a member.
 */
export function requireMayGrant(actorRole: string, newRole: string, targetRole?: string): void {
  if (actorRole === OWNER) return;
  if (!may(actorRole, 'manageMembers') && !may(actorRole, 'invite')) throw new AppError('ORGANIZATION_FORBIDDEN');
  if (newRole === OWNER || targetRole === OWNER)
    throw new AppError('ORGANIZATION_FORBIDDEN', 'Only an owner may make an owner, or change or remove one.');
}

/** Removing a member: anyone may leave; owners remove anyone, admins anyone but owners. */
export function requireMayRemove(actorRole: string, targetRole: string, self: boolean): void {
  if (self) return;
  requireMay(actorRole, 'manageMembers');
  if (targetRole === OWNER && actorRole !== OWNER)
    throw new AppError('ORGANIZATION_FORBIDDEN', 'Only an owner may make an owner, or change or remove one.');
}
