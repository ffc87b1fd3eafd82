import { z } from 'zod';
import { timestamp } from '../../timestamp.js';

// What the organization routes answer (end users' and operators'), as schemas for the reference.

export const organization = z.object({
  id: z.uuid(),
  name: z.string(),
  role: z.string().optional().meta({ description: "The caller's role in it (end users' routes)." }),
  createdAt: timestamp,
  updatedAt: timestamp,
});

export const member = z.object({
  userId: z.uuid(),
  email: z.string(),
  role: z.string().meta({ description: '`owner`, `admin`, `member`, or a role of the environment.' }),
  joinedAt: timestamp,
});

export const invitation = z.object({
  id: z.uuid(),
  organizationId: z.uuid(),
  email: z.string(),
  role: z.string(),
  status: z.enum(['pending', 'expired', 'accepted', 'revoked']),
  createdAt: timestamp,
  expiresAt: timestamp,
});

export const organizationResponse = z.object({ organization });
export const organizationListResponse = z.object({ organizations: z.array(organization) });
export const organizationDetailResponse = z.object({
  organization,
  members: z.array(member),
  invitations: z.array(invitation).meta({ description: 'Open invitations (pending or expired); empty for members who cannot invite.' }),
});
export const invitationResponse = z.object({ invitation });
export const memberResponse = z.object({ member });
export const adminOrganizationListResponse = z.object({
  organizations: z.array(organization.extend({ members: z.int().meta({ description: 'How many members it has.' }) })),
  nextCursor: z.string().nullable(),
});
