import { z } from 'zod';
import type { SecretBox } from '../core/crypto/secretbox.js';

// Identity providers an environment signs users in with (`providers` in the environment's
// settings). The operator sends `clientSecret`; what is stored is that secret sealed with
// KEY_ENCRYPTION_KEY (`clientSecretSealed`), and what is shown is only whether one is set.

/** A provider's id appears in URLs (`/auth/providers/{id}/…`) and in identities. */
export const PROVIDER_ID = /^[a-z0-9][a-z0-9_-]{0,62}$/;

/** An absolute http(s) URL without credentials in it (a `user:pass@` part would be sent to whoever the host is). */
const httpUrl = z
  .string()
  .max(2048)
  .refine((s) => {
    try {
      const u = new URL(s);
      return (u.protocol === 'https:' || u.protocol === 'http:') && !u.username && !u.password;
    } catch {
      return false;
    }
  }, 'must be an absolute http(s) URL without user name or password');

/** An OAuth scope token (RFC 6749 §3.3). */
const scope = z
  .string()
  .min(1)
  .max(128)
  .regex(/^[\x21\x23-\x5B\x5D-\x7E]+$/, 'must be an OAuth scope token');

const common = {
  id: z.string().regex(PROVIDER_ID, 'must be 1-63 lower-case letters, digits, `_` or `-`'),
  kind: z.enum(['oidc', 'oauth2']),
  /** oidc: the issuer; its endpoints and keys are read from `{issuer}/.well-known/openid-configuration`. */
  issuer: httpUrl.optional(),
  clientId: z.string().min(1).max(512),
  /** Asked for at the provider; oidc always adds `openid` (default `openid email profile`). */
  scopes: z.array(scope).max(30).optional(),
  /** oauth2: the provider's endpoints. */
  authorizationUrl: httpUrl.optional(),
  tokenUrl: httpUrl.optional(),
  userinfoUrl: httpUrl.optional(),
  /** oauth2, GitHub-style: a list of `{email, primary, verified}` for the signed-in user (GitHub's `/user/emails`). */
  emailsUrl: httpUrl.optional(),
  /** Where a sign-in may return to: `redirect_to` must equal one of these exactly. */
  allowedRedirectUrls: z.array(httpUrl).min(1).max(50),
};

type Endpoints = { kind: 'oidc' | 'oauth2'; issuer?: string; authorizationUrl?: string; tokenUrl?: string; userinfoUrl?: string };

/** oidc needs an issuer; oauth2 needs its three endpoints. */
function checkEndpoints(p: Endpoints, ctx: z.RefinementCtx): void {
  const need = p.kind === 'oidc' ? (['issuer'] as const) : (['authorizationUrl', 'tokenUrl', 'userinfoUrl'] as const);
  for (const key of need) if (!p[key]) ctx.addIssue({ code: 'custom', path: [key], message: `required for kind ${p.kind}` });
}

/** As stored in the environment's settings document. */
export const storedProvider = z
  .strictObject({ ...common, clientSecretSealed: z.string().max(8192).optional() })
  .superRefine(checkEndpoints);
export type StoredProvider = z.infer<typeof storedProvider>;

/** As the operator sends it: the secret in clear (left out: the stored one is kept). */
export const providerInput = z
  .strictObject({ ...common, clientSecret: z.string().min(1).max(1024).optional() })
  .superRefine(checkEndpoints);
export type ProviderInput = z.infer<typeof providerInput>;

/** As shown: never the secret. */
export const providerView = z.strictObject({
  ...common,
  clientSecretSet: z.boolean().meta({ description: 'Whether a client secret is stored (it is never shown).' }),
});
export type ProviderView = z.infer<typeof providerView>;

const uniqueIds = (list: readonly { id: string }[], ctx: z.RefinementCtx) => {
  const seen = new Set<string>();
  list.forEach((p, i) => {
    if (seen.has(p.id)) ctx.addIssue({ code: 'custom', path: [i, 'id'], message: `duplicate provider id ${p.id}` });
    seen.add(p.id);
  });
};

export const MAX_PROVIDERS = 20;
export const storedProviders = z.array(storedProvider).max(MAX_PROVIDERS).superRefine(uniqueIds);
export const providerInputs = z
  .array(providerInput)
  .max(MAX_PROVIDERS)
  .superRefine(uniqueIds)
  .meta({ description: 'The whole list (it replaces the stored one). A provider sent without `clientSecret` keeps its stored secret.' });

export function viewProvider(p: StoredProvider): ProviderView {
  const { clientSecretSealed, ...rest } = p;
  return { ...rest, clientSecretSet: clientSecretSealed !== undefined };
}

/** The purpose a client secret is sealed for: bound to its environment and provider, so it opens nowhere else. */
export function clientSecretPurpose(env: { projectId: string; name: string }, providerId: string): string {
  return `provider-client-secret:${env.projectId}/${env.name}/${providerId}`;
}

/** The list to store: each secret sent is sealed; a provider sent without one keeps the one stored under its id. */
export function sealProviders(
  inputs: readonly ProviderInput[],
  current: readonly StoredProvider[],
  env: { projectId: string; name: string },
  secrets: SecretBox,
): StoredProvider[] {
  return inputs.map(({ clientSecret, ...rest }) => {
    const sealed =
      clientSecret !== undefined
        ? secrets.seal(clientSecret, clientSecretPurpose(env, rest.id)).toString('base64')
        : current.find((c) => c.id === rest.id)?.clientSecretSealed;
    return sealed === undefined ? rest : { ...rest, clientSecretSealed: sealed };
  });
}

export function openClientSecret(p: StoredProvider, env: { projectId: string; name: string }, secrets: SecretBox): string | undefined {
  if (p.clientSecretSealed === undefined) return undefined;
  return secrets.open(Buffer.from(p.clientSecretSealed, 'base64'), clientSecretPurpose(env, p.id)).toString('utf8');
}
