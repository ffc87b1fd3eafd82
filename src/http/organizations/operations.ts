import * as body from '../../auth/organizations/schemas.js';
import * as res from '../auth/organizations/responses.js';
import { ANY_REQUEST_ERRORS, JSON_BODY_ERRORS, type Operation, type OperationGroup } from '../operation.js';
import { MANAGEMENT_SCOPE, managementHeaders } from '../webhooks/access.js';

// Operators' API for an environment's organizations, declared once for the router (routes.ts) and
// the reference. Same token and headers as the rest of the management API.

const common = [...MANAGEMENT_SCOPE, ...ANY_REQUEST_ERRORS] as const;
const withBody = [...common, ...JSON_BODY_ERRORS] as const;
const shared = { security: 'managementToken', headers: managementHeaders } as const;

const operations = {
  adminListOrganizations: {
    ...shared,
    method: 'get',
    path: '/',
    summary: 'List organizations',
    description: 'Newest first, 50 a page, with how many members each has.',
    query: body.listOrganizationsQuery,
    success: { status: 200, description: 'A page of organizations.', schema: res.adminOrganizationListResponse },
    errors: common,
  },
  adminCreateOrganization: {
    ...shared,
    method: 'post',
    path: '/',
    summary: 'Create an organization for a user',
    description: 'The user (of this environment) is its first owner.',
    body: body.adminCreateOrganizationBody,
    success: { status: 201, description: 'Created.', schema: res.organizationResponse },
    errors: [...withBody, 'USER_NOT_FOUND', 'ORGANIZATION_LIMIT_REACHED'],
  },
  adminGetOrganization: {
    ...shared,
    method: 'get',
    path: '/:id',
    summary: 'An organization, its members and open invitations',
    params: body.organizationParams,
    success: { status: 200, description: 'The organization.', schema: res.organizationDetailResponse },
    errors: [...common, 'ORGANIZATION_NOT_FOUND'],
  },
  adminRenameOrganization: {
    ...shared,
    method: 'patch',
    path: '/:id',
    summary: 'Rename an organization',
    params: body.organizationParams,
    body: body.renameOrganizationBody,
    success: { status: 200, description: 'Renamed.', schema: res.organizationResponse },
    errors: [...withBody, 'ORGANIZATION_NOT_FOUND'],
  },
  adminDeleteOrganization: {
    ...shared,
    method: 'delete',
    path: '/:id',
    summary: 'Delete an organization',
    description: "Soft (the audit trail keeps it); every member's tokens that carry it are refused from their next request.",
    params: body.organizationParams,
    success: { status: 204, description: 'Deleted.' },
    errors: [...common, 'ORGANIZATION_NOT_FOUND'],
  },
  adminAddMember: {
    ...shared,
    method: 'post',
    path: '/:id/members',
    summary: 'Add a user as a member',
    description: 'Directly, without an invitation; the limits apply.',
    params: body.organizationParams,
    body: body.addMemberBody,
    success: { status: 201, description: 'Added.', schema: res.memberResponse },
    errors: [...withBody, 'ORGANIZATION_NOT_FOUND', 'USER_NOT_FOUND', 'ORGANIZATION_MEMBER_EXISTS', 'ORGANIZATION_LIMIT_REACHED'],
  },
  adminChangeMemberRole: {
    ...shared,
    method: 'patch',
    path: '/:id/members/:userId',
    summary: "Change a member's role",
    description: 'The last owner stays one (409).',
    params: body.memberParams,
    body: body.roleBody,
    success: { status: 200, description: 'The member as they now are.', schema: res.memberResponse },
    errors: [...withBody, 'ORGANIZATION_NOT_FOUND', 'ORGANIZATION_MEMBER_NOT_FOUND', 'ORGANIZATION_LAST_OWNER'],
  },
  adminRemoveMember: {
    ...shared,
    method: 'delete',
    path: '/:id/members/:userId',
    summary: 'Remove a member',
    description: "Never the last owner (409). The member's tokens that carry the organization are refused from their next request.",
    params: body.memberParams,
    success: { status: 204, description: 'Removed.' },
    errors: [...common, 'ORGANIZATION_NOT_FOUND', 'ORGANIZATION_MEMBER_NOT_FOUND', 'ORGANIZATION_LAST_OWNER'],
  },
  adminInviteMember: {
    ...shared,
    method: 'post',
    path: '/:id/invitations',
    summary: 'Invite someone by e-mail',
    description: 'As an owner would; the per-hour limit of the organization applies (429).',
    params: body.organizationParams,
    body: body.inviteBody,
    success: { status: 201, description: 'Sent (the e-mail is queued).', schema: res.invitationResponse },
    errors: [...withBody, 'ORGANIZATION_NOT_FOUND', 'ORGANIZATION_MEMBER_EXISTS'],
  },
  adminRevokeInvitation: {
    ...shared,
    method: 'delete',
    path: '/:id/invitations/:invitationId',
    summary: 'Revoke an invitation',
    params: body.invitationParams,
    success: { status: 200, description: 'Revoked.', schema: res.invitationResponse },
    errors: [...common, 'ORGANIZATION_NOT_FOUND', 'INVITATION_NOT_FOUND'],
  },
} satisfies Record<string, Operation>;

export const organizationsAdminApi = {
  tag: 'Organizations (operators)',
  description:
    "Operators' access to the environment's organizations: list, create for a user, rename, delete, members and invitations. Every call needs a management token and both `X-Project-ID` and `environment`; every change is in the audit trail with the token that made it.",
  mount: '/api/rest/_organizations',
  aliases: ['/gw/api/rest/_organizations'],
  operations,
} satisfies OperationGroup;
