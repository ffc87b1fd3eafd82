import type { Invitation } from './invitations.js';
import type { Member, Organization } from './store.js';

// What the APIs show of organizations, members and invitations (never an invitation's token).

export function organizationView(o: Organization, role?: string) {
  return {
    id: o.id,
    name: o.name,
    ...(role === undefined ? {} : { role }),
    createdAt: o.createdAt.toISOString(),
    updatedAt: o.updatedAt.toISOString(),
  };
}

export function memberView(m: Member) {
  return { userId: m.userId, email: m.email, role: m.role, joinedAt: m.createdAt.toISOString() };
}

export function invitationView(i: Invitation, now: Date) {
  const status = i.acceptedAt ? 'accepted' : i.revokedAt ? 'revoked' : i.expiresAt <= now ? 'expired' : 'pending';
  return {
    id: i.id,
    organizationId: i.organizationId,
    email: i.email,
    role: i.role,
    status,
    createdAt: i.createdAt.toISOString(),
    expiresAt: i.expiresAt.toISOString(),
  };
}
