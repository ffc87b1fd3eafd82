import * as oidc from 'openid-client';
import type { Context } from '../../core/context.js';
import { AppError } from '../../core/errors.js';
import type { Environment } from '../../projects/environments.js';
import { openClientSecret, type StoredProvider } from '../../projects/providers.js';
import { providerFetch, ProviderUnreachableError, type ProviderFetch } from './fetch.js';

// The protocol side of a provider sign-in, all of it through openid-client: discovery, the
// authorization URL (code + PKCE + state, and a nonce for OpenID Connect), the code exchange with
// the validation of the ID token (issuer, audience, nonce, expiry, signature by the provider's
// JWKS) and the userinfo. Nothing here parses or checks a token by hand.

/** What walgate learns about the person at the provider. */
export interface ProviderProfile {
  subject: string;
  email: string | undefined;
  /** Only when the provider says so explicitly. */
  emailVerified: boolean;
  name: string | undefined;
}

/** A discovered configuration is kept this long (the provider's keys are re-read when a token names an unknown one). */
const CONFIGURATION_TTL_MS = 10 * 60_000;
const DEFAULT_OIDC_SCOPES = ['openid', 'email', 'profile'];
const PROVIDER_TIMEOUT_MS = 10_000;

export class ProviderProtocol {
  readonly #fetch: ProviderFetch;
  readonly #configurations = new Map<string, { at: number; config: Promise<oidc.Configuration> }>();

  constructor(private readonly ctx: Pick<Context, 'config' | 'lookup' | 'secrets'>) {
    this.#fetch = providerFetch({
      allowPrivate: ctx.config.providers.allowPrivateNetworks,
      lookup: ctx.lookup,
      timeoutMs: PROVIDER_TIMEOUT_MS,
    });
  }

  /** The URL the browser is sent to at the provider. */
  async authorizationUrl(
    env: Environment,
    provider: StoredProvider,
    input: { redirectUri: string; state: string; nonce: string; codeVerifier: string },
  ): Promise<URL> {
    const config = await this.#configuration(env, provider);
    const scopes = provider.kind === 'oidc' ? withOpenid(provider.scopes ?? DEFAULT_OIDC_SCOPES) : (provider.scopes ?? []);
    const params: Record<string, string> = {
      redirect_uri: input.redirectUri,
      response_type: 'code',
      state: input.state,
      code_challenge: await oidc.calculatePKCECodeChallenge(input.codeVerifier),
      code_challenge_method: 'S256',
    };
    if (scopes.length) params.scope = scopes.join(' ');
    if (provider.kind === 'oidc') params.nonce = input.nonce;
    return oidc.buildAuthorizationUrl(config, params);
  }

  /**
   * The provider's answer at the callback (`currentUrl` is the callback URL as the provider called
   * it): the code exchanged and everything checked, or AUTH_PROVIDER_RESPONSE_INVALID saying why.
   */
  async profile(
    env: Environment,
    provider: StoredProvider,
    currentUrl: URL,
    checks: { state: string; nonce: string; codeVerifier: string },
  ): Promise<ProviderProfile> {
    const config = await this.#configuration(env, provider);
    try {
      if (provider.kind === 'oidc') {
        const tokens = await oidc.authorizationCodeGrant(config, currentUrl, {
          pkceCodeVerifier: checks.codeVerifier,
          expectedState: checks.state,
          expectedNonce: checks.nonce,
          idTokenExpected: true,
        });
        const claims = tokens.claims()!;
        let info: Record<string, unknown> = {};
        // ID tokens often carry only `sub` when an access token for the userinfo was issued too
        // (OpenID Connect Core §5.4); the userinfo's `sub` must be the ID token's.
        if (config.serverMetadata().userinfo_endpoint && (claims.email === undefined || claims.email_verified === undefined))
          info = await oidc.fetchUserInfo(config, tokens.access_token, claims.sub);
        const merged = { ...info, ...claims } as Record<string, unknown>;
        return {
          subject: claims.sub,
          email: asEmail(merged.email),
          emailVerified: merged.email_verified === true || merged.email_verified === 'true',
          name: typeof merged.name === 'string' ? merged.name.slice(0, 200) : undefined,
        };
      }
      const tokens = await oidc.authorizationCodeGrant(config, currentUrl, {
        pkceCodeVerifier: checks.codeVerifier,
        expectedState: checks.state,
      });
      return await this.#oauth2Profile(config, provider, tokens.access_token);
    } catch (err) {
      throw asProviderError(err);
    }
  }

  /** GitHub-style: the user endpoint (`id` or `sub`), and the e-mail list for whether an address is verified. */
  async #oauth2Profile(config: oidc.Configuration, provider: StoredProvider, accessToken: string): Promise<ProviderProfile> {
    const user = await this.#getJson(config, accessToken, provider.userinfoUrl!);
    if (!isRecord(user)) throw new AppError('AUTH_PROVIDER_RESPONSE_INVALID', 'The user endpoint did not answer with an object.');
    const id = user.sub ?? user.id;
    if ((typeof id !== 'string' && typeof id !== 'number') || String(id).length === 0 || String(id).length > 255)
      throw new AppError('AUTH_PROVIDER_RESPONSE_INVALID', 'The user endpoint gave no usable `id` or `sub`.');
    let email = asEmail(user.email);
    let emailVerified = user.email_verified === true;
    if (provider.emailsUrl) {
      const list = await this.#getJson(config, accessToken, provider.emailsUrl);
      const entries = Array.isArray(list) ? list.filter(isRecord).slice(0, 100) : [];
      // The primary address when it is verified; otherwise the one the user endpoint showed, as verified as the list says.
      const primary = entries.find((e) => e.primary === true && e.verified === true && asEmail(e.email));
      const shown = entries.find((e) => email !== undefined && asEmail(e.email) === email);
      if (primary) {
        email = asEmail(primary.email);
        emailVerified = true;
      } else if (shown) emailVerified = shown.verified === true;
    }
    return { subject: String(id), email, emailVerified, name: typeof user.name === 'string' ? user.name.slice(0, 200) : undefined };
  }

  async #getJson(config: oidc.Configuration, accessToken: string, url: string): Promise<unknown> {
    const headers = new Headers({ accept: 'application/json' });
    const res = await oidc.fetchProtectedResource(config, accessToken, new URL(url), 'GET', undefined, headers);
    if (!res.ok) throw new AppError('AUTH_PROVIDER_RESPONSE_INVALID', `${new URL(url).origin} answered ${res.status}.`);
    try {
      return await res.json();
    } catch {
      throw new AppError('AUTH_PROVIDER_RESPONSE_INVALID', `${new URL(url).origin} did not answer with JSON.`);
    }
  }

  /** The provider's configuration: discovered (oidc) or from its settings (oauth2), kept a while. */
  #configuration(env: Environment, provider: StoredProvider): Promise<oidc.Configuration> {
    // The settings themselves are the key: a change of issuer, client or secret is a new configuration.
    const key = `${env.projectId}\0${env.name}\0${JSON.stringify(provider)}`;
    const cached = this.#configurations.get(key);
    if (cached && Date.now() - cached.at < CONFIGURATION_TTL_MS) return cached.config;
    const config = this.#build(env, provider).catch((err: unknown) => {
      this.#configurations.delete(key); // a failure is not kept: the next sign-in tries again
      throw err;
    });
    if (this.#configurations.size > 1000) this.#configurations.clear();
    this.#configurations.set(key, { at: Date.now(), config });
    return config;
  }

  async #build(env: Environment, provider: StoredProvider): Promise<oidc.Configuration> {
    const secret = openClientSecret(provider, env, this.ctx.secrets);
    // Client authentication: the spec's default for OpenID Connect (basic), GitHub's documented one (post) for OAuth 2.0; none for a public client (PKCE only).
    const auth =
      secret === undefined ? oidc.None() : provider.kind === 'oidc' ? oidc.ClientSecretBasic(secret) : oidc.ClientSecretPost(secret);
    const insecure = this.ctx.config.providers.allowPrivateNetworks;
    try {
      if (provider.kind === 'oidc') {
        return await oidc.discovery(new URL(provider.issuer!), provider.clientId, undefined, auth, {
          // openid-client trusts an ID token from the token endpoint on TLS alone (OpenID Connect
          // Core §3.1.3.7 allows it); walgate checks its signature against the provider's JWKS too.
          execute: insecure ? [oidc.allowInsecureRequests, oidc.enableNonRepudiationChecks] : [oidc.enableNonRepudiationChecks],
          [oidc.customFetch]: this.#fetch,
          timeout: PROVIDER_TIMEOUT_MS / 1000,
        });
      }
      const config = new oidc.Configuration(
        {
          issuer: new URL(provider.authorizationUrl!).origin,
          authorization_endpoint: provider.authorizationUrl,
          token_endpoint: provider.tokenUrl,
          userinfo_endpoint: provider.userinfoUrl,
        },
        provider.clientId,
        undefined,
        auth,
      );
      config[oidc.customFetch] = this.#fetch;
      config.timeout = PROVIDER_TIMEOUT_MS / 1000;
      if (insecure) oidc.allowInsecureRequests(config);
      return config;
    } catch (err) {
      throw new AppError('AUTH_PROVIDER_UNAVAILABLE', `Provider ${provider.id}: ${describe(err)}`);
    }
  }
}

function withOpenid(scopes: readonly string[]): string[] {
  return scopes.includes('openid') ? [...scopes] : ['openid', ...scopes];
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** An address as walgate stores them (lower case), or nothing when it is not one. */
function asEmail(v: unknown): string | undefined {
  if (typeof v !== 'string' || v.length > 254 || !/^[^\s@]+@[^\s@]+$/.test(v)) return undefined;
  return v.toLowerCase();
}

/** The reason a provider failed us, from openid-client's error or what it wraps. */
function describe(err: unknown): string {
  const unreachable = unreachableCause(err);
  if (unreachable) return unreachable.message;
  const e = err as { message?: string; cause?: unknown; error?: string; error_description?: string };
  // An OAuth error answered by the provider (RFC 6749 §5.2) says what it is itself.
  if (typeof e.error === 'string') return `${e.error}${e.error_description ? `: ${e.error_description}` : ''}`;
  // openid-client names the claim that failed in the cause (nonce, aud, exp …): say which.
  let claim: unknown;
  for (let c: unknown = e.cause, depth = 0; c && typeof c === 'object' && depth < 3 && claim === undefined; depth++) {
    claim = (c as { claim?: unknown }).claim;
    c = (c as { cause?: unknown }).cause;
  }
  return `${String(e.message ?? err)}${typeof claim === 'string' ? ` (${claim})` : ''}`.slice(0, 300);
}

/** A failure of the exchange: unreachable provider (502), or an answer that does not verify (401, with the reason). */
function asProviderError(err: unknown): AppError {
  if (err instanceof AppError) return err;
  return new AppError(unreachableCause(err) ? 'AUTH_PROVIDER_UNAVAILABLE' : 'AUTH_PROVIDER_RESPONSE_INVALID', describe(err));
}

/** openid-client wraps a failed fetch ("something went wrong"): the network error is in its causes. */
function unreachableCause(err: unknown): ProviderUnreachableError | undefined {
  for (let e: unknown = err, depth = 0; e && depth < 4; depth++) {
    if (e instanceof ProviderUnreachableError) return e;
    e = (e as { cause?: unknown }).cause;
  }
  return undefined;
}
