import { z } from 'zod';
import { factor } from '../auth/mfa/responses.js';
import { tokenPair } from '../auth/responses.js';
import { timestamp } from '../timestamp.js';
import { email } from '../../auth/schemas.js';
import { AUTH_EVENT_TYPES } from '../../auth/events/kinds.js';
import { appMetadataObject } from '../../auth/users/metadata.js';

// Requests and answers of the admin API (/api/rest/_users, /api/rest/_auth-events).

const cursor = z.string().max(200).optional().meta({ description: 'The `nextCursor` of the previous page.' });

export const userParams = z.object({ id: z.uuid({ message: 'must be a user id (a UUID)' }) });

export const listUsersQuery = z.object({
  query: z.string().max(254).optional().meta({ description: 'An e-mail prefix.' }),
  status: z.enum(['unverified', 'active', 'locked', 'disabled']).optional(),
  cursor,
});

export const eventsQuery = z.object({
  type: z.enum(AUTH_EVENT_TYPES as [string, ...string[]]).optional(),
  since: z.iso
    .datetime({ offset: true })
    .optional()
    .meta({ description: 'Events at or after this time.', examples: ['2026-11-24T10:00:00.000Z'] }),
  until: z.iso
    .datetime({ offset: true })
    .optional()
    .meta({ description: 'Events before this time.', examples: ['2026-11-25T10:00:00.000Z'] }),
  cursor,
});

export const createUserBody = z
  .object({
    email,
    name: z.string().trim().max(200).nullish(),
    password: z.string().min(1).max(4096).optional(),
    emailVerified: z.boolean().optional(),
    invite: z.boolean().optional().meta({ description: 'E-mail a code with which the user chooses a password (`/auth/reset-password`).' }),
    appMetadata: appMetadataObject.optional(),
  })
  .strict();

export const updateUserBody = z
  .object({ disabled: z.boolean().optional(), emailVerified: z.boolean().optional(), appMetadata: appMetadataObject.optional() })
  .strict();

const metadata = z.record(z.string(), z.unknown());

export const adminUser = z.object({
  id: z.uuid(),
  email: z.string(),
  name: z.string().nullable(),
  emailVerified: z.boolean(),
  createdAt: timestamp,
  userMetadata: metadata,
  appMetadata: metadata,
  status: z.enum(['unverified', 'active', 'locked', 'disabled']),
  disabled: z.boolean(),
  disabledAt: timestamp.nullable(),
  lockedUntil: timestamp.nullable(),
});

export const userListResponse = z.object({ users: z.array(adminUser), nextCursor: z.string().nullable() });

const session = z.object({
  id: z.uuid(),
  createdAt: timestamp,
  expiresAt: timestamp,
  revokedAt: timestamp.nullable(),
  revokedReason: z.string().nullable(),
});
const mail = z.object({
  id: z.uuid(),
  purpose: z.string(),
  state: z.enum(['queued', 'sent', 'dead']),
  attempts: z.int(),
  lastError: z.string().nullable(),
  createdAt: timestamp,
  sentAt: timestamp.nullable(),
});

export const userDetailResponse = z.object({
  user: adminUser,
  sessions: z.array(session),
  emails: z.array(mail).meta({ description: "The user's recent e-mails and their state (never their content)." }),
  factors: z.array(factor).meta({ description: "The user's active second factors (never a secret)." }),
  identities: z.array(z.unknown()),
});

export const logoutResponse = z.object({ sessionsEnded: z.int() });

export const authEvent = z.object({
  id: z.uuid(),
  type: z.string(),
  userId: z.uuid().nullable(),
  sessionId: z.uuid().nullable(),
  actor: z.string().nullable().meta({ description: 'The management token that acted (admin actions).' }),
  clientAddress: z.string().nullable(),
  userAgent: z.string().nullable(),
  details: metadata,
  createdAt: timestamp,
});

export const eventListResponse = z.object({ events: z.array(authEvent), nextCursor: z.string().nullable() });

export const userFactorParams = z.object({
  id: z.uuid({ message: 'must be a user id' }),
  factorId: z.uuid({ message: 'must be a factor id' }),
});

/** POST /api/rest/_users/{id}/impersonate (the body is optional). */
export const impersonateBody = z.strictObject({
  durationSeconds: z
    .int()
    .min(60)
    .max(3600)
    .optional()
    .meta({ description: 'How long the session lasts, refreshed or not: 60 to 3600 seconds (default 1800).' }),
});

export const impersonateResponse = tokenPair.extend({
  expiresAt: timestamp.meta({ description: 'When the impersonation session ends.' }),
});
