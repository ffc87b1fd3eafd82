import { z } from 'zod';
import { DEFAULT_RATE_LIMITS } from '../core/store/rate-limits.js';
import { retryDelays } from './retry-delays.js';
import { providerInputs, providerView, storedProviders, viewProvider, type StoredProvider } from './providers.js';

// An environment's settings: ONE schema, whose defaults are the seed's values. The CLI
// (`walgate project set`) and the management API (`/api/rest/_environment`) write through it, the
// api reads it through the environment cache. A capability that needs settings of its own adds a
// key here with its default; stored environments without the key get the default, nothing else
// changes. Settings the first release kept in typed columns (COLUMN_SETTINGS) stay there; every
// other key lives in the `settings` JSON document of the environment row (sql/019).

const seconds = (max: number) => z.int().min(1).max(max);
/** The typed columns' own bound (a positive int4): a stored value always reads back. */
const INT4 = 2_147_483_647;
const DAY = 86_400;

/** A rate limit: `points` requests per `durationSeconds`, per key (client address or e-mail). */
const rate = z.strictObject({ points: z.int().min(1).max(1_000_000), durationSeconds: seconds(DAY) });
const limit = (d: { points: number; durationSeconds: number }) => rate.default({ points: d.points, durationSeconds: d.durationSeconds });
const ratePatch = rate.partial().optional();

/** Auth limits that an environment may set (the management API's limit is the platform's). */
export const LIMIT_KEYS = [
  'signup',
  'login',
  'recoverPassword',
  'recoverPasswordPerIp',
  'confirmSignupPerIp',
  'confirmSignupPerEmail',
  'resetPasswordPerIp',
  'resetPasswordPerEmail',
  'refreshTokenPerIp',
  'providerSignInPerIp',
  'mfaChallengePerIp',
  'mfaChallengePerUser',
  'passkeyLoginPerIp',
] as const;
export type LimitKey = (typeof LIMIT_KEYS)[number];

const limits = z
  .object(Object.fromEntries(LIMIT_KEYS.map((k) => [k, limit(DEFAULT_RATE_LIMITS[k])])) as Record<LimitKey, ReturnType<typeof limit>>)
  .prefault({});

/** A browser origin: scheme, host and port, nothing else (what the Origin header carries). */
const origin = z.string().refine((s) => {
  try {
    const u = new URL(s);
    return (u.protocol === 'https:' || u.protocol === 'http:') && u.origin === s;
  } catch {
    return false;
  }
}, 'must be an origin such as https://app.example.com (scheme, host and port; no path, no trailing slash)');

/** The roles every organization has; an environment's own roles take other names. */
export const BUILT_IN_ROLES = ['owner', 'admin', 'member'] as const;
const roleName = z
  .string()
  .regex(/^[a-z][a-z0-9_-]{0,39}$/, 'must be 1-40 characters: a-z first, then a-z, 0-9, _ or -')
  .refine((n) => !(BUILT_IN_ROLES as readonly string[]).includes(n), 'owner, admin and member are built in');
/** Permissions travel in access tokens (`org_permissions`): few and short, so a token stays small. */
const permission = z.string().regex(/^[a-zA-Z0-9_.:-]{1,48}$/, 'must be 1-48 characters of a-z, A-Z, 0-9, _ . : -');

/** Organizations (docs/organizations.md): the environment's own roles and the limits. */
const organizations = z
  .strictObject({
    /** Roles besides owner, admin and member, each with the permissions that its members' tokens carry. */
    roles: z
      .array(z.strictObject({ name: roleName, permissions: z.array(permission).max(32).default([]) }))
      .max(20)
      .refine((roles) => new Set(roles.map((r) => r.name)).size === roles.length, 'role names must be unique')
      .default([]),
    /** Invitations one organization may send in an hour. */
    invitationsPerHour: z.int().min(1).max(10_000).default(50),
    /** Organizations one user may belong to (creating or joining one more is refused). */
    maxOrganizationsPerUser: z.int().min(1).max(10_000).default(20),
    /** Members one organization may have. */
    maxMembers: z.int().min(1).max(100_000).default(500),
    /** How long an invitation can be accepted. */
    invitationTtlSeconds: seconds(30 * DAY).default(7 * DAY),
    /** The page of your app that the invitation e-mail links to (with `?invitation=<token>`); default PUBLIC_URL. */
    invitationUrl: z
      .url({ protocol: /^https?$/ })
      .max(2000)
      .optional(),
  })
  .prefault({});

export const environmentSettings = z.object({
  authEnabled: z.boolean().default(true),
  tokenFormat: z.enum(['jws', 'jwe']).default('jws'),
  signingAlg: z.enum(['ES256', 'RS256', 'EdDSA']).default('ES256'),
  accessTokenTtlSeconds: seconds(INT4).default(900),
  /** Idle lifetime: a session not refreshed for this long ends. */
  refreshTokenTtlSeconds: seconds(INT4).default(30 * DAY),
  /** Absolute lifetime: a session ends this long after its login, however often it is refreshed. */
  sessionLifetimeSeconds: seconds(365 * DAY).default(30 * DAY),
  codeTtlSeconds: seconds(INT4).default(600),
  codeMaxAttempts: seconds(INT4).default(5),
  lockoutThreshold: seconds(INT4).default(5),
  lockoutSeconds: seconds(INT4).default(900),
  /** Browser origins allowed to call the auth API (CORS); `*` allows any, without credentials. */
  corsOrigins: z
    .array(z.union([z.literal('*'), origin]))
    .max(100)
    .default([]),
  limits,
  /** Identity providers users may sign in with (providers.ts); client secrets stored sealed. */
  providers: storedProviders.default([]),
  /** `required`: tokens without a second factor (aal1) are accepted only to enrol one, list factors and log out. */
  mfa: z.enum(['optional', 'required']).default('optional'),
  /** Once a user has a factor, changing factors (add, remove, new recovery codes) needs a session that proved a second factor this recently. */
  mfaReauthSeconds: seconds(DAY).default(900),
  /** A device token (the lockout exemption of a known client) is worth nothing this long after it was issued, nor once the password is reset. */
  deviceTokenTtlSeconds: seconds(365 * DAY).default(90 * DAY),
  /** The WebAuthn relying party of passkeys: its id (a host name; default PUBLIC_URL's), its name (default the project id) and the page origins allowed (default PUBLIC_URL's). */
  webauthn: z
    .strictObject({
      rpId: z.string().min(1).max(253).optional(),
      rpName: z.string().min(1).max(200).optional(),
      origins: z.array(origin).max(100).default([]),
    })
    .prefault({}),
  /** `schema.function` of the environment's own schema, `(user jsonb, claims jsonb) → jsonb`, whose keys join every access token (docs/claims.md); null: none. */
  claimsFunction: z
    .string()
    .regex(/^[A-Za-z_][A-Za-z0-9_$]{0,62}\.[A-Za-z_][A-Za-z0-9_$]{0,62}$/, 'must name a function as schema.function')
    .nullable()
    .default(null),
  /** Sign-in with an e-mailed code or a magic link (docs/passwordless.md): off by default; `signUp` lets an unknown address get an account that way; links lead only to `redirectUrls` (exact match). */
  passwordless: z
    .strictObject({
      enabled: z.boolean().default(false),
      signUp: z.boolean().default(false),
      redirectUrls: z
        .array(z.url({ protocol: /^https?$/ }).max(2000))
        .max(100)
        .default([]),
    })
    .prefault({}),
  organizations,
  /** The environment's default retry schedule of its subscriptions (a subscription's `retry` overrides it); null: WEBHOOK_RETRY_DELAYS_MS. */
  webhookRetryDelaysMs: retryDelays.nullable().default(null),
});

export type Settings = z.infer<typeof environmentSettings>;

/** A change: any subset of the keys, each limit on its own. Unknown keys are refused, not ignored. */
type Plain = Omit<typeof environmentSettings.shape, 'limits'>;
/** Each setting without its default: a key left out of a change must stay as it is, not fall back to its default. */
const withoutDefaults = Object.fromEntries(
  Object.entries(environmentSettings.omit({ limits: true }).shape).map(([k, field]) => [k, field.unwrap().optional()]),
) as { [K in keyof Plain]: z.ZodOptional<ReturnType<Plain[K]['unwrap']>> };

export const settingsPatch = z.strictObject({
  ...withoutDefaults,
  limits: z.strictObject(Object.fromEntries(LIMIT_KEYS.map((k) => [k, ratePatch])) as Record<LimitKey, typeof ratePatch>).optional(),
  providers: providerInputs.optional(),
});
export type SettingsPatch = z.infer<typeof settingsPatch>;
/** A change whose provider secrets have been sealed (providers.ts sealProviders): what applyPatch takes. */
export type SealedSettingsPatch = Omit<SettingsPatch, 'providers'> & { providers?: StoredProvider[] };

/** The settings as the management API and the CLI show them: secrets never, only whether one is set. */
export const settingsView = environmentSettings.extend({ providers: z.array(providerView) });
export function viewSettings(settings: Settings): z.infer<typeof settingsView> {
  return { ...settings, providers: settings.providers.map(viewProvider) };
}

/** Keys stored in typed columns of walgate.environments (sql/001), by column. */
export const COLUMN_SETTINGS = {
  authEnabled: 'auth_enabled',
  tokenFormat: 'token_format',
  signingAlg: 'signing_alg',
  accessTokenTtlSeconds: 'access_token_ttl_seconds',
  refreshTokenTtlSeconds: 'refresh_token_ttl_seconds',
  codeTtlSeconds: 'code_ttl_seconds',
  codeMaxAttempts: 'code_max_attempts',
  lockoutThreshold: 'lockout_threshold',
  lockoutSeconds: 'lockout_seconds',
} as const satisfies Partial<Record<keyof Settings, string>>;

export type ColumnSetting = keyof typeof COLUMN_SETTINGS;

/** The settings after a change: limits merge per entry, everything else replaces. */
export function applyPatch(current: Settings, patch: SealedSettingsPatch): Settings {
  const mergedLimits = Object.fromEntries(LIMIT_KEYS.map((k) => [k, { ...current.limits[k], ...patch.limits?.[k] }]));
  const defined = Object.fromEntries(Object.entries(patch).filter(([k, v]) => v !== undefined && k !== 'limits'));
  return environmentSettings.parse({ ...current, ...defined, limits: mergedLimits });
}

/** What goes into the JSON document: every key that has no column of its own. */
export function documentPart(settings: Settings): Record<string, unknown> {
  return Object.fromEntries(Object.entries(settings).filter(([k]) => !(k in COLUMN_SETTINGS)));
}
