import { z } from 'zod';
import { email } from '../schemas.js';

// Request bodies and parameters of the organization routes (end users' and operators'). A role is
// any string here: whether the environment defines it is the service's check (400 naming the roles).

const name = z
  .string()
  .trim()
  .min(1, 'is required')
  .max(200, 'must be at most 200 characters')
  .meta({ description: 'The organization’s name (1-200 characters).', examples: ['Acme'] });
const role = z
  .string()
  .min(1, 'is required')
  .max(40, 'must be at most 40 characters')
  .meta({ description: '`owner`, `admin`, `member`, or a role of the environment (setting `organizations.roles`).', examples: ['admin'] });
const organizationId = z.uuid({ message: 'must be an organization id (a UUID)' });

export const createOrganizationBody = z.object({ name });
export const renameOrganizationBody = z.object({ name });
export const organizationParams = z.object({ id: organizationId });
export const memberParams = z.object({ id: organizationId, userId: z.uuid({ message: 'must be a user id (a UUID)' }) });
export const invitationParams = z.object({ id: organizationId, invitationId: z.uuid({ message: 'must be an invitation id (a UUID)' }) });
export const inviteBody = z.object({ email, role });
export const roleBody = z.object({ role });
export const acceptInvitationBody = z.object({
  token: z
    .string()
    .min(1, 'is required')
    .max(200, 'is too long')
    .meta({ description: 'The `invitation` parameter of the e-mailed link.', examples: ['wgi_…'] }),
});
export const switchOrganizationBody = z.object({
  organizationId: organizationId.nullable().meta({ description: 'An organization of yours, or null to act for none.' }),
});

/** Operators create an organization for a user of the environment, its first owner. */
export const adminCreateOrganizationBody = z.object({ name, ownerId: z.uuid({ message: 'must be a user id (a UUID)' }) });
/** Operators add a user of the environment directly, without an invitation. */
export const addMemberBody = z.object({ userId: z.uuid({ message: 'must be a user id (a UUID)' }), role });
export const listOrganizationsQuery = z.object({
  cursor: z.string().max(200).optional().meta({ description: 'The `nextCursor` of the previous page.' }),
});
