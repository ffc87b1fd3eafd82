import { createHash } from 'node:crypto';
import type { Context } from '../../core/context.js';
import { constantTimeEqual, hashToken, randomToken } from '../../core/crypto/tokens.js';
import { PgCode, pgCode, withTransaction, type Queryable } from '../../core/db/pool.js';
import { AppError } from '../../core/errors.js';
import { refuseImpersonation } from '../impersonation.js';
import type { Environment, EnvironmentCache } from '../../projects/environments.js';
import type { StoredProvider } from '../../projects/providers.js';
import { append, type EventOrigin } from '../events/append.js';
import { spendLimit } from '../limits.js';
import { AUTH_EVENT } from '../events/kinds.js';
import type { MfaService } from '../mfa/service.js';
import type { MfaRequired } from '../mfa/view.js';
import { origin, type SessionService, type TokenPair } from '../sessions/service.js';
import type { SessionClient } from '../sessions/store.js';
import { findUserByEmail, USER_COLUMNS, type User } from '../users.js';
import { FLOW_VERIFIER_PURPOSE, insertFlow, insertGrant, takeFlow, useGrant } from './flows.js';
import { insertIdentity, insertProviderUser, listIdentities, removeIdentity, touchIdentity, type Identity } from './identities.js';
import type { ProviderProfile } from './protocol.js';
import { ProviderProtocol } from './protocol.js';

// Sign-in with an identity provider, as the user lives it: off to the provider, back at the
// callback (checked there by openid-client), back at the application with a one-time code, and
// the code exchanged — with the application's PKCE verifier — for a session. Every completed
// provider sign-in goes through completeSignIn.

/** How long a user may take at the provider. */
const FLOW_TTL_MS = 10 * 60_000;
/** How long the application has to exchange its code (it does so at once, on landing). */
const GRANT_TTL_MS = 2 * 60_000;

type Client = SessionClient & EventOrigin;

export interface IdentityView {
  id: string;
  provider: string;
  subject: string;
  email: string | null;
  createdAt: string;
  lastSignInAt: string;
}

export class ProviderService {
  readonly protocol: ProviderProtocol;

  constructor(
    private readonly ctx: Context,
    private readonly sessions: SessionService,
    private readonly environments: EnvironmentCache,
    /** A user with an active second factor gets the MFA step instead of a pair (mfa/service.ts). */
    private readonly mfa: MfaService,
  ) {
    this.protocol = new ProviderProtocol(ctx);
  }

  /** Where the provider sends the browser back: registered at the provider by the operator. */
  callbackUrl(providerId: string): string {
    return `${this.ctx.config.publicUrl}/auth/providers/${providerId}/callback`;
  }

  /** The provider's authorization URL for a new sign-in that returns to `redirectTo`. */
  async authorize(
    env: Environment,
    providerId: string,
    input: { redirectTo: string; codeChallenge: string },
    client: { ip: string },
  ): Promise<string> {
    const provider = findProvider(env, providerId);
    allowedRedirect(provider, input.redirectTo);
    await spendLimit(this.ctx, env, 'providerSignInPerIp', client.ip);
    const now = this.ctx.clock();
    const state = randomToken();
    const nonce = randomToken();
    const codeVerifier = randomToken(); // 43 base64url characters: a valid PKCE verifier (RFC 7636 §4.1)
    const url = await this.protocol.authorizationUrl(env, provider, {
      redirectUri: this.callbackUrl(provider.id),
      state,
      nonce,
      codeVerifier,
    });
    const flow = {
      projectId: env.projectId,
      environment: env.name,
      provider: provider.id,
      redirectTo: input.redirectTo,
      codeChallenge: input.codeChallenge,
      nonce,
      codeVerifier: this.ctx.secrets.seal(codeVerifier, FLOW_VERIFIER_PURPOSE),
    };
    await insertFlow(this.ctx.pool, hashToken(state), flow, now, new Date(now.getTime() + FLOW_TTL_MS));
    this.#count('provider_authorize');
    return url.href;
  }

  /**
   * The provider's redirect back. A missing, unknown, used or expired state is a 400 (there is no
   * trustworthy place to send the browser); from there on, success and failure alike go back to
   * the flow's `redirect_to`: with `code`, or with `error` and `error_description`.
   */
  async callback(providerId: string, query: URLSearchParams, client: Client): Promise<string> {
    const state = query.get('state');
    if (!state || state.length > 512) throw new AppError('AUTH_PROVIDER_STATE_INVALID');
    const now = this.ctx.clock();
    const flow = await takeFlow(this.ctx.pool, hashToken(state), providerId, now);
    if (!flow) throw new AppError('AUTH_PROVIDER_STATE_INVALID');
    const env = await this.environments.get(flow.projectId, flow.environment);
    if (!env || !env.authEnabled) throw new AppError('AUTH_NOT_CONFIGURED');
    const provider = findProvider(env, providerId);
    // Taken off the list since the sign-in began: not a place to send anyone any more.
    allowedRedirect(provider, flow.redirectTo);
    const back = new URL(flow.redirectTo);
    try {
      const currentUrl = new URL(`${this.callbackUrl(providerId)}?${query.toString()}`);
      const codeVerifier = this.ctx.secrets.open(flow.codeVerifier, FLOW_VERIFIER_PURPOSE).toString('utf8');
      const profile = await this.protocol.profile(env, provider, currentUrl, { state, nonce: flow.nonce, codeVerifier });
      const user = await this.#userOf(env, provider, profile, client, now);
      if (user.disabledAt) throw new AppError('AUTH_USER_DISABLED');
      const code = randomToken();
      const grant = {
        userId: user.id,
        provider: provider.id,
        codeChallenge: flow.codeChallenge,
        projectId: env.projectId,
        environment: env.name,
      };
      await insertGrant(this.ctx.pool, hashToken(code), grant, now, new Date(now.getTime() + GRANT_TTL_MS));
      back.searchParams.set('code', code);
      this.#count('provider_callback_ok');
    } catch (err) {
      if (!(err instanceof AppError)) throw err;
      this.ctx.log.info({ provider: providerId, error: err.code, reason: err.message }, 'provider sign-in refused');
      this.#count(`provider_callback_${err.code.toLowerCase()}`);
      back.searchParams.set('error', err.code);
      back.searchParams.set('error_description', err.message);
    }
    return back.href;
  }

  /** The application's one-time code and the PKCE verifier of the challenge it began with: a session (or the MFA step). */
  async exchange(
    env: Environment,
    input: { code: string; codeVerifier: string },
    client: Client & { ip: string },
  ): Promise<TokenPair | MfaRequired> {
    await spendLimit(this.ctx, env, 'providerSignInPerIp', client.ip);
    const now = this.ctx.clock();
    // Used up by this request whatever follows: a code is never good for a second try.
    const grant = await useGrant(this.ctx.pool, hashToken(input.code), env, now);
    const challenge = createHash('sha256').update(input.codeVerifier).digest('base64url');
    if (!grant || !constantTimeEqual(Buffer.from(challenge), Buffer.from(grant.codeChallenge))) {
      this.#count('provider_exchange_invalid');
      throw new AppError('AUTH_INVALID_CODE');
    }
    const user = await findUser(this.ctx.pool, grant.userId);
    if (!user) throw new AppError('AUTH_INVALID_CODE');
    return this.completeSignIn(env, user, client, now);
  }

  /**
   * Every provider sign-in ends here, and only here: the one place where a further step (a second
   * factor) joins before a session is given.
   */
  async completeSignIn(env: Environment, user: User, client: Client, now: Date): Promise<TokenPair | MfaRequired> {
    const finished = await this.mfa.finishSignIn(env, user, client, now, { event: AUTH_EVENT.providerSignedIn, amr: ['fed'] });
    this.#count('provider_sign_in');
    return finished;
  }

  async identities(env: Environment, authorization: string | undefined): Promise<{ identities: IdentityView[] }> {
    const claims = await this.sessions.authenticate(env, authorization);
    return { identities: (await listIdentities(this.ctx.pool, claims.sub)).map(identityView) };
  }

  /** Removes one of the caller's identities; never the last way they have to sign in. */
  async unlink(env: Environment, authorization: string | undefined, identityId: string, client: EventOrigin): Promise<void> {
    const claims = await this.sessions.authenticate(env, authorization);
    refuseImpersonation(claims);
    const now = this.ctx.clock();
    await withTransaction(this.ctx.pool, async (c) => {
      const removed = await removeIdentity(c, claims.sub, identityId);
      if (removed.outcome === 'not_found') throw new AppError('IDENTITY_NOT_FOUND');
      if (removed.outcome === 'last') throw new AppError('AUTH_LAST_SIGN_IN_METHOD');
      const details = { provider: removed.identity.provider, identityId };
      await append(c, env, { type: AUTH_EVENT.identityUnlinked, userId: claims.sub, ...origin(client), details }, now);
    });
  }

  /**
   * The user this provider account signs in: its identity's user; else a new identity linked to
   * the account with the same address — only when the provider vouches for the address AND the
   * account has verified it (anything else would hand the account to whoever controls the
   * provider account: AUTH_PROVIDER_LINK_UNVERIFIED); else a new user.
   */
  async #userOf(env: Environment, provider: StoredProvider, profile: ProviderProfile, client: Client, now: Date): Promise<User> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await withTransaction(this.ctx.pool, (c) => this.#resolve(c, env, provider, profile, client, now));
      } catch (err) {
        // Two first sign-ins of one subject (or address) at once: the loser finds the winner's rows.
        if (pgCode(err) !== PgCode.uniqueViolation || attempt > 0) throw err;
      }
    }
  }

  async #resolve(
    c: Queryable,
    env: Environment,
    provider: StoredProvider,
    profile: ProviderProfile,
    client: Client,
    now: Date,
  ): Promise<User> {
    const known = await touchIdentity(c, env, provider.id, profile.subject, profile.email, now);
    if (known) return (await findUser(c, known.userId))!;
    if (!profile.email)
      throw new AppError('AUTH_PROVIDER_RESPONSE_INVALID', 'The provider gave no e-mail address (ask for the `email` scope).');
    let user = await findUserByEmail(c, env, profile.email);
    if (user && !(profile.emailVerified && user.emailVerifiedAt)) throw new AppError('AUTH_PROVIDER_LINK_UNVERIFIED');
    if (!user) {
      user = await insertProviderUser(
        c,
        env,
        { email: profile.email, name: profile.name ?? null, emailVerified: profile.emailVerified },
        now,
      );
      const details = { email: user.email, provider: provider.id };
      await append(c, env, { type: AUTH_EVENT.signedUp, userId: user.id, ...origin(client), details }, now);
    }
    const identity = await insertIdentity(
      c,
      env,
      { userId: user.id, provider: provider.id, subject: profile.subject, email: profile.email },
      now,
    );
    const details = { provider: provider.id, identityId: identity.id };
    await append(c, env, { type: AUTH_EVENT.identityLinked, userId: user.id, ...origin(client), details }, now);
    return user;
  }

  #count(event: string): void {
    this.ctx.metrics.authEvents.inc({ event });
  }
}

function findProvider(env: Environment, providerId: string): StoredProvider {
  const provider = env.settings.providers.find((p) => p.id === providerId);
  if (!provider) throw new AppError('AUTH_PROVIDER_NOT_FOUND');
  return provider;
}

/**
 * `redirect_to` must be one of the allowed URLs, character for character: no prefix, no path
 * below, no other query, so `https://app.example.com.evil.example/` and
 * `https://app.example.com@evil.example/` never pass for `https://app.example.com/`.
 */
function allowedRedirect(provider: StoredProvider, redirectTo: string): void {
  if (!provider.allowedRedirectUrls.includes(redirectTo)) throw new AppError('AUTH_REDIRECT_NOT_ALLOWED');
}

async function findUser(db: Queryable, userId: string): Promise<User | undefined> {
  const { rows } = await db.query<User>(`SELECT ${USER_COLUMNS} FROM walgate.users WHERE id = $1`, [userId]);
  return rows[0];
}

function identityView(i: Identity): IdentityView {
  return {
    id: i.id,
    provider: i.provider,
    subject: i.subject,
    email: i.email,
    createdAt: i.createdAt.toISOString(),
    lastSignInAt: i.lastSignInAt.toISOString(),
  };
}
