import { TtlCache } from '../../core/cache.js';
import type { Context } from '../../core/context.js';
import type { SecretBox } from '../../core/crypto/secretbox.js';
import { withTransaction, type Queryable } from '../../core/db/pool.js';
import { AppError } from '../../core/errors.js';
import type { Environment } from '../../projects/environments.js';
import { append, type EventOrigin } from '../events/append.js';
import { AUTH_EVENT, type AuthEventType } from '../events/kinds.js';
import type { AuthMethod } from '../assurance.js';
import { isTokenRevoked, type ActiveOrganization, type ActiveOrganizationSource } from '../active-organization.js';
import { acceptedIssuers, issuerOf } from '../issuer.js';
import { isImpersonation } from '../impersonation.js';
import type { KeyRing } from '../keyring.js';
import { spendLimit } from '../limits.js';
import { accessPayload, bearerToken, signAccessToken, verifyAccessToken, type AccessClaims } from '../tokens.js';
import { withCustomClaims } from '../claims/call.js';
import * as users from '../users.js';
import { decideRefresh } from './decision.js';
import {
  exchangeRefreshToken,
  findGraceSuccessor,
  findRefreshToken,
  switchSessionOrganization,
  undoExchange,
  type StoredToken,
} from './exchange.js';
import {
  createSession,
  impersonatingOperator,
  listUserSessions,
  revokeOwnSession,
  revokeSessionRow,
  revokeUserSessions,
  type SessionClient,
} from './store.js';

// Sessions as the user lives them: starting one, refreshing it (with a grace for concurrent tabs
// and retries), checking access tokens, and seeing and ending one's own sessions on every device.

export interface TokenPair {
  accessToken: string;
  refreshToken: string;
  tokenType: 'Bearer';
  expiresIn: number;
}

export type LogoutScope = 'local' | 'others' | 'global';

export const LOGOUT_MESSAGE = 'You have been logged out.';

/** A refresh that raced another one and lost more than this many times is refused (never happens in practice). */
const EXCHANGE_ROUNDS = 5;

type Profile = { user: users.UserView; session: { id: string; expiresAt: string } };

export class SessionService {
  /**
   * Tokens whose signature (and, for JWE, encryption) has been checked, by token: a client sends
   * one token with every request for its lifetime, and repeating the check buys nothing. Expiry
   * and the revocation list are still checked on every request.
   */
  readonly #verified: TtlCache<string, AccessClaims>;

  /**
   * What `/auth/me` shows of a session, briefly remembered: nothing in it can change while the
   * session lives but the name (no API changes it), and a revoked session is refused by the
   * revocation list before this is read.
   */
  readonly #profiles: TtlCache<string, Profile | undefined>;

  constructor(
    private readonly ctx: Context,
    private readonly keys: KeyRing,
    /** The membership behind a session's active organization (organizations/, wired in service.ts). */
    private readonly organizations?: ActiveOrganizationSource,
  ) {
    this.#profiles = new TtlCache(ctx.cacheTtlMs);
    this.#verified = new TtlCache(ctx.cacheTtlMs);
  }

  /**
   * A new session for a user who just proved who they are (login, confirmed signup); its audit row
   * commits with it. A disabled user gets none. `amr` says how they proved it (assurance.ts).
   */
  async start(
    env: Environment,
    user: users.User,
    client: SessionClient & EventOrigin,
    now: Date,
    {
      event = AUTH_EVENT.loggedIn,
      amr = ['pwd'],
      lifetimeSeconds,
      actor,
    }: {
      event?: AuthEventType;
      amr?: readonly AuthMethod[];
      /** A time-boxed session (impersonation): it ends this long after it starts, however often refreshed. */
      lifetimeSeconds?: number;
      /** The management token that started it, for the audit row. */
      actor?: string;
    } = {},
  ): Promise<TokenPair> {
    if (user.disabledAt) throw new AppError('AUTH_USER_DISABLED');
    const details = amr.length === 1 && amr[0] === 'pwd' ? {} : { details: { amr } };
    const bounds = lifetimeSeconds ? { idleSeconds: lifetimeSeconds, absoluteSeconds: lifetimeSeconds } : lifetimes(env);
    // The session and its audit row in one statement (store.ts); disabled (or deleted) since it was read: no session.
    const session = await createSession(this.ctx.pool, user.id, env, client, bounds, now, amr, {
      type: event,
      ...origin(client),
      ...(actor ? { actor } : {}),
      ...details,
    });
    if (!session) throw new AppError('AUTH_USER_DISABLED');
    const who = { userId: user.id, email: user.email, sessionId: session.sessionId, appMetadata: session.appMetadata, amr: session.amr };
    try {
      return await this.#pair(env, who, session.refreshToken, now);
    } catch (err) {
      // No token (the claims function failed): the session nobody can use must not linger in the user's list.
      await revokeSessionRow(this.ctx.pool, session.sessionId, 'no token issued', now).catch(() => undefined);
      throw err;
    }
  }

  async refresh(env: Environment, input: { refreshToken: string }, client: SessionClient): Promise<TokenPair> {
    await spendLimit(this.ctx, env, 'refreshTokenPerIp', client.ip);
    const now = this.ctx.clock();
    const grace = this.ctx.config.refreshReuseGraceSeconds;
    // The successor is derived from the token (a MAC under walgate's key), not drawn at random:
    // every exchange of one token within the grace hands out the same successor, so the session
    // keeps one chain, and nothing secret is stored to do so (only its hash, like every token).
    const successor = successorOf(this.ctx.secrets, input.refreshToken);
    // The common case in one statement: an unused token of a live session. Anything else (a
    // reuse, a race with a concurrent exchange, a dead token) is read and decided (decision.ts).
    // The active organization's membership is read in the same statement (one round trip).
    const exchange = () =>
      exchangeRefreshToken(
        this.ctx.pool,
        input.refreshToken,
        successor,
        env,
        client,
        env.refreshTokenTtlSeconds,
        now,
        this.organizations?.membershipSql,
      );
    let exchanged = await exchange();
    for (let round = 0; !exchanged && round < EXCHANGE_ROUNDS; round++) {
      const seen = await findRefreshToken(this.ctx.pool, input.refreshToken, successor, env);
      const decision = decideRefresh(seen, now, grace);
      if (decision.kind === 'invalid') {
        this.#count(`refresh_invalid_${decision.reason}`);
        throw invalidRefresh();
      }
      if (decision.kind === 'reuse') {
        await this.#endReusedSession(env, seen!, client, now);
        throw invalidRefresh();
      }
      exchanged = seen!.usedAt
        ? await findGraceSuccessor(this.ctx.pool, input.refreshToken, successor, new Date(now.getTime() - grace * 1000), env, now)
        : await exchange();
      if (exchanged && seen!.usedAt) this.#count('refresh_grace');
    }
    if (!exchanged) throw invalidRefresh();
    this.#count('refresh_ok');
    this.#profiles.delete(exchanged.sessionId); // its expiry moved
    // The organization as the membership stands now: a new role shows, a removed member's is gone.
    const orgId = exchanged.activeOrganizationId;
    const organization =
      !orgId || !this.organizations
        ? undefined
        : exchanged.membership !== undefined
          ? this.organizations.organization(env, orgId, exchanged.membership)
          : await this.organizations.lookup(env, orgId, exchanged.userId);
    try {
      return await this.#pair(env, { ...exchanged, organization }, exchanged.refreshToken, now);
    } catch (err) {
      await undoExchange(this.ctx.pool, input.refreshToken, exchanged.refreshToken, now).catch(() => undefined);
      throw err;
    }
  }

  /** A used token presented again after its grace, or after its successor was used: the chain leaked, the session ends. */
  async #endReusedSession(env: Environment, seen: StoredToken, client: SessionClient & EventOrigin, now: Date): Promise<void> {
    this.#count('refresh_reuse');
    const reason = 'refresh token reused';
    await withTransaction(this.ctx.pool, async (c) => {
      await revokeSessionRow(c, seen.sessionId, reason, now);
      const who = { userId: seen.userId, sessionId: seen.sessionId, ...origin(client) };
      await append(c, env, { type: AUTH_EVENT.sessionRevoked, ...who, details: { reason } }, now);
      await append(c, env, { type: AUTH_EVENT.refreshReuse, ...who }, now);
    });
    await this.revokeAccess(env, [seen.sessionId], now);
    this.ctx.log.warn(
      { sessionId: seen.sessionId },
      'a used refresh token was presented again after the grace or after its successor: session revoked',
    );
  }

  /**
   * The claims of a valid, unrevoked access token (every protected request goes through here).
   * In an environment whose `mfa` setting is `required`, a token without a second factor (aal1)
   * is refused with 403 AUTH_MFA_REQUIRED, except by the calls that say `firstFactorEnough`:
   * enrolling a factor, listing factors, logging out.
   */
  async authenticate(
    env: Environment,
    authorization: string | undefined,
    { firstFactorEnough = false }: { firstFactorEnough?: boolean } = {},
  ): Promise<AccessClaims> {
    const token = bearerToken(authorization);
    const now = this.ctx.clock();
    const skew = this.ctx.config.tokenClockSkewSeconds;
    const claims = await this.#verified.get(`${env.projectId}\0${env.name}\0${token}`, () =>
      verifyAccessToken(this.keys, env, token, acceptedIssuers(this.ctx.config.publicUrl, env), now, skew),
    );
    if ((claims.exp + skew) * 1000 <= now.getTime()) throw new AppError('AUTH_TOKEN_EXPIRED');
    // A signature cannot say that the session was logged out (or the member removed from the
    // token's organization): the revocation list can.
    if (await isTokenRevoked(this.ctx.revocations, claims)) throw new AppError('AUTH_TOKEN_INVALID', 'The token has been revoked.');
    if (env.settings.mfa === 'required' && claims.aal !== 'aal2' && !firstFactorEnough) throw new AppError('AUTH_MFA_REQUIRED');
    return claims;
  }

  /**
   * The operator acting through an impersonation session (its management token), for the audit
   * rows of what the session does; null for the user's own sessions.
   */
  async operatorOf(claims: Pick<AccessClaims, 'sub' | 'sid' | 'amr'>): Promise<string | null> {
    return isImpersonation(claims) ? impersonatingOperator(this.ctx.pool, claims.sub, claims.sid) : null;
  }

  /** `local`: this session; `others`: every other session of the user; `global`: all of them. */
  async logout(env: Environment, authorization: string | undefined, scope: LogoutScope = 'local', client: EventOrigin = {}) {
    const claims = await this.authenticate(env, authorization, { firstFactorEnough: true });
    const now = this.ctx.clock();
    const actor = await this.operatorOf(claims);
    const ended = await withTransaction(this.ctx.pool, async (c) => {
      const event = { type: AUTH_EVENT.loggedOut, userId: claims.sub, sessionId: claims.sid, ...origin(client), actor, details: { scope } };
      await append(c, env, event, now);
      if (scope !== 'local')
        return revokeUserSessions(c, claims.sub, `logout (${scope})`, now, scope === 'others' ? claims.sid : undefined);
      await revokeSessionRow(c, claims.sid, 'logout', now);
      return [claims.sid];
    });
    await this.revokeAccess(env, ended, now);
    this.#count(`logout_${scope}`);
    return { message: LOGOUT_MESSAGE };
  }

  async me(env: Environment, authorization: string | undefined) {
    const claims = await this.authenticate(env, authorization);
    const profile = await this.#profiles.get(claims.sid, async () => {
      const found = await users.findSessionUser(this.ctx.pool, claims.sid);
      return found && { user: users.userView(found.user), session: { id: claims.sid, expiresAt: found.sessionExpiresAt.toISOString() } };
    });
    if (!profile || profile.user.id !== claims.sub) throw new AppError('AUTH_TOKEN_INVALID');
    return profile;
  }

  /** The user's live sessions, the caller's own marked `current`. */
  async list(env: Environment, authorization: string | undefined) {
    const claims = await this.authenticate(env, authorization);
    const rows = await listUserSessions(this.ctx.pool, claims.sub, this.ctx.clock());
    return {
      sessions: rows.map((r) => ({
        id: r.id,
        createdAt: r.createdAt.toISOString(),
        lastUsedAt: r.lastUsedAt.toISOString(),
        ip: r.ip,
        userAgent: r.userAgent,
        current: r.id === claims.sid,
        impersonated: r.amr.includes('impersonation'),
      })),
    };
  }

  /** Ends one of the caller's own sessions; another user's session id is as unknown as a made-up one. */
  async end(env: Environment, authorization: string | undefined, sessionId: string, client: EventOrigin = {}) {
    const claims = await this.authenticate(env, authorization);
    const now = this.ctx.clock();
    const actor = await this.operatorOf(claims);
    const ended = await withTransaction(this.ctx.pool, async (c) => {
      if (!(await revokeOwnSession(c, claims.sub, sessionId, 'ended by the user', now))) return false;
      const event = { type: AUTH_EVENT.sessionRevoked, userId: claims.sub, sessionId, ...origin(client), actor };
      await append(c, env, { ...event, details: { reason: 'ended by the user' } }, now);
      return true;
    });
    if (!ended) throw new AppError('SESSION_NOT_FOUND');
    await this.revokeAccess(env, [sessionId], now);
    this.#count('session_ended');
    return { message: LOGOUT_MESSAGE };
  }

  /**
   * A new pair for the caller's session, switched to the organization `membership` finds (undefined:
   * to none) in the switch's transaction. The token is signed after the commit, so that no
   * connection is held while the claims function or the key store answers.
   */
  async switchOrganization(
    env: Environment,
    claims: AccessClaims,
    now: Date,
    membership: (db: Queryable) => Promise<ActiveOrganization | undefined>,
  ): Promise<TokenPair> {
    const { switched, organization } = await withTransaction(this.ctx.pool, async (c) => {
      const organization = await membership(c);
      return { organization, switched: await switchSessionOrganization(c, claims.sid, claims.sub, env, organization?.id ?? null, now) };
    });
    if (!switched) throw new AppError('AUTH_TOKEN_INVALID', 'The session has ended.');
    this.#profiles.delete(switched.sessionId);
    return this.#pair(env, { ...switched, organization }, switched.refreshToken, now);
  }

  /** /auth/me shows a change of the user at once (userMetadata was set). */
  forgetProfile(sessionId: string): void {
    this.#profiles.delete(sessionId);
  }

  /** Ends every session of a user (password reset, forced logout), inside the caller's transaction when given one. */
  async endAll(env: Environment, userId: string, reason: string, now: Date, db: Queryable = this.ctx.pool): Promise<string[]> {
    return revokeUserSessions(db, userId, reason, now);
  }

  /**
   * Access tokens of these sessions stop working now, although they would verify until they
   * expire: the entries live as long as any such token could still be accepted, its lifetime
   * plus the clock-skew grace that authenticate() gives.
   */
  async revokeAccess(env: Environment, sessionIds: string[], now: Date): Promise<void> {
    const until = new Date(now.getTime() + (env.accessTokenTtlSeconds + this.ctx.config.tokenClockSkewSeconds) * 1000);
    for (const sid of sessionIds) {
      this.#profiles.delete(sid);
      await this.ctx.revocations.revoke(sid, until);
    }
  }

  async #pair(
    env: Environment,
    who: {
      userId: string;
      email: string;
      sessionId: string;
      amr: readonly string[];
      appMetadata?: Record<string, unknown>;
      organization?: ActiveOrganization;
    },
    refreshToken: string,
    now: Date,
  ): Promise<TokenPair> {
    const payload = accessPayload(env, { ...who, issuer: issuerOf(this.ctx.config.publicUrl, env), now });
    // The one place access tokens are minted: the environment's claims function (claims/) joins
    // here, so every path (login, refresh, MFA, providers, passkeys) carries its claims or fails.
    const claimsFunction = env.settings.claimsFunction;
    const claims = claimsFunction ? await withCustomClaims(this.ctx, env, claimsFunction, payload) : payload;
    const access = await signAccessToken(this.keys, env, claims);
    return { accessToken: access.token, refreshToken, tokenType: 'Bearer', expiresIn: access.expiresIn };
  }

  #count(event: string): void {
    this.ctx.metrics.authEvents.inc({ event });
  }
}

/** What the audit trail keeps of a client. */
export function origin(client: EventOrigin): EventOrigin {
  return { clientAddress: client.clientAddress ?? null, userAgent: client.userAgent ?? null };
}

function lifetimes(env: Environment) {
  return { idleSeconds: env.refreshTokenTtlSeconds, absoluteSeconds: env.settings.sessionLifetimeSeconds };
}

function invalidRefresh(): AppError {
  return new AppError('AUTH_TOKEN_INVALID', 'The refresh token is invalid, expired or already used.');
}

/** The successor of a refresh token: the same for every exchange of it, unknowable without walgate's key. */
function successorOf(secrets: SecretBox, token: string): string {
  return secrets.mac(`refresh-successor:${token}`).toString('base64url');
}
