import type { ErrorCode } from '../../../core/errors.js';
import * as body from '../../../auth/organizations/schemas.js';
import { ANY_REQUEST_ERRORS, JSON_BODY_ERRORS, type Operation, type OperationGroup } from '../../operation.js';
import { projectHeaders } from '../../scope.js';
import { tokenPair } from '../responses.js';
import * as res from './responses.js';

// Organizations under /auth, declared once for the router (routes.ts), GraphQL and the reference.

const AUTH_SCOPE = ['VALIDATION_ERROR', 'AUTH_NOT_CONFIGURED'] as const satisfies readonly ErrorCode[];
/** Every route here is protected: where `mfa` is `required`, a token without a second factor is 403. */
const PROTECTED = ['AUTH_TOKEN_INVALID', 'AUTH_TOKEN_EXPIRED', 'AUTH_MFA_REQUIRED'] as const satisfies readonly ErrorCode[];
const common = [...AUTH_SCOPE, ...ANY_REQUEST_ERRORS, ...PROTECTED] as const;
const withBody = [...common, ...JSON_BODY_ERRORS] as const;
const shared = { security: 'accessToken', headers: projectHeaders } as const;

const operations = {
  createOrganization: {
    ...shared,
    method: 'post',
    path: '/organizations',
    summary: 'Create an organization',
    description: 'The caller is its owner. Limited by the setting `organizations.maxOrganizationsPerUser` (409 beyond it).',
    body: body.createOrganizationBody,
    success: { status: 201, description: 'Created.', schema: res.organizationResponse },
    errors: [...withBody, 'ORGANIZATION_LIMIT_REACHED'],
  },
  listOrganizations: {
    ...shared,
    method: 'get',
    path: '/organizations',
    summary: 'Your organizations',
    description: 'Each with your role in it, oldest membership first.',
    success: { status: 200, description: 'The organizations.', schema: res.organizationListResponse },
    errors: common,
  },
  acceptInvitation: {
    ...shared,
    method: 'post',
    path: '/organizations/invitations/accept',
    summary: 'Accept an invitation',
    description:
      'With the token of the e-mailed link (its `invitation` parameter), signed in (or freshly signed up and confirmed) with the address it was sent to. Works once; an unknown, expired, used or revoked token, or one sent to another address, is 400 `INVITATION_INVALID`.',
    body: body.acceptInvitationBody,
    success: { status: 200, description: 'You are a member, with the role the invitation named.', schema: res.organizationResponse },
    errors: [...withBody, 'INVITATION_INVALID', 'AUTH_EMAIL_NOT_VERIFIED', 'ORGANIZATION_MEMBER_EXISTS', 'ORGANIZATION_LIMIT_REACHED'],
  },
  switchOrganization: {
    ...shared,
    method: 'post',
    path: '/organizations/active',
    summary: 'Act for an organization',
    description:
      "A new token pair of this session whose access token carries `org_id`, `org_role` and `org_permissions` (null: none). The session's refreshes keep carrying it, with the role as it then is; once you are removed, your tokens that carry it are refused and a refresh answers without it. The session's earlier refresh token counts as used.",
    body: body.switchOrganizationBody,
    success: { status: 200, description: 'The new pair.', schema: tokenPair },
    errors: [...withBody, 'ORGANIZATION_FORBIDDEN'],
  },
  getOrganization: {
    ...shared,
    method: 'get',
    path: '/organizations/:id',
    summary: 'One of your organizations',
    description: 'Its members, and for owners and admins its open invitations. Not a member: 404.',
    params: body.organizationParams,
    success: { status: 200, description: 'The organization.', schema: res.organizationDetailResponse },
    errors: [...common, 'ORGANIZATION_NOT_FOUND'],
  },
  renameOrganization: {
    ...shared,
    method: 'patch',
    path: '/organizations/:id',
    summary: 'Rename an organization',
    description: 'Owners and admins.',
    params: body.organizationParams,
    body: body.renameOrganizationBody,
    success: { status: 200, description: 'Renamed.', schema: res.organizationResponse },
    errors: [...withBody, 'ORGANIZATION_NOT_FOUND', 'ORGANIZATION_FORBIDDEN'],
  },
  deleteOrganization: {
    ...shared,
    method: 'delete',
    path: '/organizations/:id',
    summary: 'Delete an organization',
    description: "Owners only. Soft (the audit trail keeps it); every member's tokens that carry it are refused from the next request.",
    params: body.organizationParams,
    success: { status: 204, description: 'Deleted.' },
    errors: [...common, 'ORGANIZATION_NOT_FOUND', 'ORGANIZATION_FORBIDDEN'],
  },
  inviteMember: {
    ...shared,
    method: 'post',
    path: '/organizations/:id/invitations',
    summary: 'Invite someone by e-mail',
    description:
      'Owners and admins (only owners invite owners). The e-mail links to the setting `organizations.invitationUrl` (default `PUBLIC_URL`) with the token as `invitation=`; valid `organizations.invitationTtlSeconds` (7 days). At most `organizations.invitationsPerHour` (50) per organization (429).',
    params: body.organizationParams,
    body: body.inviteBody,
    success: { status: 201, description: 'Sent (the e-mail is queued).', schema: res.invitationResponse },
    errors: [...withBody, 'ORGANIZATION_NOT_FOUND', 'ORGANIZATION_FORBIDDEN', 'ORGANIZATION_MEMBER_EXISTS', 'RATE_LIMIT_EXCEEDED'],
  },
  revokeInvitation: {
    ...shared,
    method: 'delete',
    path: '/organizations/:id/invitations/:invitationId',
    summary: 'Revoke an invitation',
    description: 'Owners and admins; its link stops working.',
    params: body.invitationParams,
    success: { status: 200, description: 'Revoked.', schema: res.invitationResponse },
    errors: [...common, 'ORGANIZATION_NOT_FOUND', 'ORGANIZATION_FORBIDDEN', 'INVITATION_NOT_FOUND'],
  },
  changeMemberRole: {
    ...shared,
    method: 'patch',
    path: '/organizations/:id/members/:userId',
    summary: "Change a member's role",
    description:
      "Owners and admins; only owners make owners or change an owner's role, and the last owner stays one (409). The member's tokens show it from their next refresh.",
    params: body.memberParams,
    body: body.roleBody,
    success: { status: 200, description: 'The member as they now are.', schema: res.memberResponse },
    errors: [...withBody, 'ORGANIZATION_NOT_FOUND', 'ORGANIZATION_FORBIDDEN', 'ORGANIZATION_MEMBER_NOT_FOUND', 'ORGANIZATION_LAST_OWNER'],
  },
  removeMember: {
    ...shared,
    method: 'delete',
    path: '/organizations/:id/members/:userId',
    summary: 'Remove a member, or leave',
    description:
      "Your own user id: you leave. Owners remove anyone, admins anyone but owners; the last owner cannot go (409). The member's tokens that carry the organization are refused from their next request.",
    params: body.memberParams,
    success: { status: 204, description: 'Removed.' },
    errors: [...common, 'ORGANIZATION_NOT_FOUND', 'ORGANIZATION_FORBIDDEN', 'ORGANIZATION_MEMBER_NOT_FOUND', 'ORGANIZATION_LAST_OWNER'],
  },
} satisfies Record<string, Operation>;

export const organizationsApi = {
  tag: 'Organizations',
  description:
    "Users' organizations in an environment: members with roles (`owner`, `admin`, `member`, and the environment's own), invitations by e-mail, and the active organization that access tokens carry (`org_id`, `org_role`, `org_permissions`).",
  mount: '/auth',
  aliases: [],
  operations,
} satisfies OperationGroup;
