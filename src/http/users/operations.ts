import { ANY_REQUEST_ERRORS, JSON_BODY_ERRORS, type Operation, type OperationGroup } from '../operation.js';
import { managementHeaders } from '../webhooks/access.js';
import { MANAGEMENT_SCOPE } from '../webhooks/access.js';
import * as s from './schemas.js';

// The admin API for end users and their audit trail, declared once for the routers (routes.ts)
// and the reference. Same token and headers as the webhook API.

const common = [...MANAGEMENT_SCOPE, ...ANY_REQUEST_ERRORS] as const;
const withBody = [...common, ...JSON_BODY_ERRORS] as const;
const shared = { security: 'managementToken', headers: managementHeaders } as const;

const userOperations = {
  listUsers: {
    ...shared,
    method: 'get',
    path: '/',
    summary: 'Search users',
    description: 'Newest first, 50 a page; `query` is an e-mail prefix, `status` one of unverified, active, locked, disabled.',
    query: s.listUsersQuery,
    success: { status: 200, description: 'A page of users.', schema: s.userListResponse },
    errors: common,
  },
  createUser: {
    ...shared,
    method: 'post',
    path: '/',
    summary: 'Create or invite a user',
    description:
      'With a `password` (confirmed or not, `emailVerified`), or `invite: true`: the user receives a code by e-mail and chooses a password with `/auth/reset-password`.',
    body: s.createUserBody,
    success: { status: 201, description: 'Created.', schema: s.userDetailResponse },
    errors: [...withBody, 'AUTH_EMAIL_EXISTS'],
  },
  getUser: {
    ...shared,
    method: 'get',
    path: '/:id',
    summary: 'A user, their sessions and recent e-mails',
    params: s.userParams,
    success: { status: 200, description: 'The user.', schema: s.userDetailResponse },
    errors: [...common, 'USER_NOT_FOUND'],
  },
  updateUser: {
    ...shared,
    method: 'patch',
    path: '/:id',
    summary: 'Disable, enable, verify, or set appMetadata',
    description: 'Disabling ends every session at once: refresh is refused and live access tokens too, from their next request.',
    params: s.userParams,
    body: s.updateUserBody,
    success: { status: 200, description: 'The user as it now is.', schema: s.userDetailResponse },
    errors: [...withBody, 'USER_NOT_FOUND'],
  },
  deleteUser: {
    ...shared,
    method: 'delete',
    path: '/:id',
    summary: 'Delete a user and everything of theirs',
    description:
      'Sessions, tokens, codes and queued e-mails go with the user; access tokens are refused at once. The audit trail stays until retention.',
    params: s.userParams,
    success: { status: 204, description: 'Deleted.' },
    errors: [...common, 'USER_NOT_FOUND'],
  },
  logoutUser: {
    ...shared,
    method: 'post',
    path: '/:id/logout',
    summary: 'End every session of the user',
    params: s.userParams,
    bodyRequired: false,
    success: { status: 200, description: 'How many sessions were live.', schema: s.logoutResponse },
    errors: [...common, 'USER_NOT_FOUND'],
  },
  removeUserFactor: {
    ...shared,
    method: 'delete',
    path: '/:id/factors/:factorId',
    summary: "Remove one of a user's second factors",
    description:
      'For a user who lost their phone or passkey: their next login asks for the remaining factors, or none. Removing the last factor removes the recovery codes too.',
    params: s.userFactorParams,
    success: { status: 204, description: 'Removed.' },
    errors: [...common, 'USER_NOT_FOUND', 'MFA_FACTOR_NOT_FOUND'],
  },
  impersonateUser: {
    ...shared,
    method: 'post',
    path: '/:id/impersonate',
    summary: 'Sign in as the user (impersonation)',
    description:
      'A time-boxed session as the user: its access tokens carry `act: {"sub": "operator"}` and amr `impersonation`, and cannot change the user\'s password, e-mail, second factors or identities (403 `AUTH_IMPERSONATION_FORBIDDEN`). The start is a `user.impersonation_started` audit row naming the management token; the user sees the session (`impersonated: true` in `GET /auth/sessions`) and can end it. The body is optional.',
    params: s.userParams,
    body: s.impersonateBody,
    bodyRequired: false,
    success: { status: 201, description: 'The session’s token pair.', schema: s.impersonateResponse },
    errors: [...common, ...JSON_BODY_ERRORS, 'USER_NOT_FOUND', 'AUTH_USER_DISABLED', 'AUTH_CLAIMS_FUNCTION_FAILED'],
  },
  listUserEvents: {
    ...shared,
    method: 'get',
    path: '/:id/events',
    summary: "A user's audit trail",
    params: s.userParams,
    query: s.eventsQuery,
    success: { status: 200, description: 'A page of events, newest first.', schema: s.eventListResponse },
    errors: [...common, 'USER_NOT_FOUND'],
  },
} satisfies Record<string, Operation>;

export const usersApi = {
  tag: 'Users',
  description:
    "Operators' access to the environment's end users: search, create, disable, delete, log out, and each user's audit trail. Every call needs a management token and both `X-Project-ID` and `environment`.",
  mount: '/api/rest/_users',
  aliases: ['/gw/api/rest/_users'],
  operations: userOperations,
} satisfies OperationGroup;

export const authEventsApi = {
  tag: 'Auth events',
  description:
    "The environment's audit trail: one event per auth state change, newest first. Subscribe to them with a webhook on `_auth_events`.",
  mount: '/api/rest/_auth-events',
  aliases: ['/gw/api/rest/_auth-events'],
  operations: {
    listAuthEvents: {
      ...shared,
      method: 'get',
      path: '/',
      summary: 'Search the audit trail',
      description: 'Filtered by `type` and time (`since` inclusive, `until` exclusive); 50 a page.',
      query: s.eventsQuery,
      success: { status: 200, description: 'A page of events.', schema: s.eventListResponse },
      errors: common,
    },
  } satisfies Record<string, Operation>,
} satisfies OperationGroup;
