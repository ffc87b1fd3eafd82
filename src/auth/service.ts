import { TtlCache } from '../core/cache.js';
import type { Context } from '../core/context.js';
import { PgCode, pgCode, withTransaction } from '../core/db/pool.js';
import { AppError, validationError } from '../core/errors.js';
import type { Environment } from '../projects/environments.js';
import { append, appendIfUser } from './events/append.js';
import { AUTH_EVENT as EVENT, type AuthEventType } from './events/kinds.js';
import { enforceRateLimit, type RateLimitPolicy } from '../core/store/rate-limits.js';
import { consumeCode, matchCode, takeCode } from './codes.js';
import type { KeyRing } from './keyring.js';
import { accountKey, clearLoginFailures, recordLoginSuccess, reserveLoginAttempt } from './lockout.js';
import { queueCodeMail } from './mail.js';
import { hashPassword, lengthViolations, needsRehash, passwordViolations, spendVerificationTime, verifyPassword } from './passwords.js';
import { createSession, revokeSessionRow, revokeUserSessions, rotateRefreshToken } from './sessions.js';
import { bearerToken, issueAccessToken, verifyAccessToken, type AccessClaims } from './tokens.js';
import * as users from './users.js';

// The rules of authentication, whatever the transport (REST routes, GraphQL resolvers): every
// check, every timing precaution and every error lives here.

export const MESSAGES = {
  signup: 'Check your e-mail for a 6-digit code to confirm your address.',
  recover: 'If the address is registered, a 6-digit code to reset the password is on its way.',
  reset: 'Your password has been reset. Sign in with the new password.',
  logout: 'You have been logged out.',
} as const;

export interface RequestMeta {
  /** The client's key for per-IP limits and lockouts (IPv6: its /64). */
  ip: string;
  /** For the audit trail. */
  clientAddress?: string;
  userAgent?: string;
}

/** A user id that matches no row: unknown addresses run the same statements as known ones. */
const NOBODY = '00000000-0000-0000-0000-000000000000';

export interface TokenPair {
  accessToken: string;
  refreshToken: string;
  tokenType: 'Bearer';
  expiresIn: number;
}

export class AuthService {
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
  readonly #profiles: TtlCache<string, { user: users.UserView; session: { id: string; expiresAt: string } } | undefined>;

  constructor(
    private readonly ctx: Context,
    readonly keys: KeyRing,
  ) {
    this.#profiles = new TtlCache(ctx.cacheTtlMs);
    this.#verified = new TtlCache(ctx.cacheTtlMs);
  }

  async signup(env: Environment, input: { email: string; password: string; name?: string | null }, meta: RequestMeta) {
    // Cheap checks first (limit, a taken address), then the expensive ones.
    await this.#limit(this.ctx.rateLimits.signup, meta.ip);
    if (await users.findUserByEmail(this.ctx.pool, env, input.email)) throw new AppError('AUTH_EMAIL_EXISTS');
    const violations = passwordViolations(input.password, input.email);
    if (violations.length) throw validationError(violations, 'The password does not meet the policy.');
    const passwordHash = await hashPassword(input.password);
    const now = this.ctx.clock();
    try {
      // User, code, its e-mail and the audit row commit together; the courier sends the e-mail
      // later, so a slow mail server holds no request. Concurrent signups with one address wait
      // on the unique index; one commits, the others get 409 (and leave no event).
      const user = await withTransaction(this.ctx.pool, async (c) => {
        const created = await users.insertUser(c, env, { email: input.email, name: input.name ?? null, passwordHash }, now);
        await queueCodeMail(c, this.ctx.secrets, env, created, 'signup', now);
        await append(c, env, { type: EVENT.signedUp, userId: created.id, ...meta, details: { email: created.email } }, now);
        return created;
      });
      this.ctx.courier.nudge();
      this.#count('signup');
      return { userId: user.id, message: MESSAGES.signup };
    } catch (err) {
      if (pgCode(err) === PgCode.uniqueViolation) throw new AppError('AUTH_EMAIL_EXISTS');
      throw err;
    }
  }

  async confirmSignup(env: Environment, input: { email: string; code: string }, meta: RequestMeta) {
    await this.#limit(this.ctx.rateLimits.confirmSignupPerIp, meta.ip);
    await this.#limit(this.ctx.rateLimits.confirmSignupPerEmail, emailKey(env, input.email));
    const now = this.ctx.clock();
    const user = await users.findUserByEmail(this.ctx.pool, env, input.email);
    const confirmed = await consumeCode(
      this.ctx.pool,
      this.ctx.secrets,
      user?.id ?? NOBODY,
      'signup',
      input.code,
      env.codeMaxAttempts,
      now,
    );
    if (!user || !confirmed) {
      this.#count('confirm_failed');
      throw new AppError('AUTH_INVALID_CODE');
    }
    this.#count('confirm_ok');
    const verified = await withTransaction(this.ctx.pool, async (c) => {
      await append(c, env, { type: EVENT.confirmed, userId: user.id, ...meta }, now);
      return users.markVerified(c, user.id, now);
    });
    const pair = await this.#startSession(env, verified, now, meta);
    return { ...pair, user: users.userView(verified) };
  }

  async login(env: Environment, input: { email: string; password: string }, meta: RequestMeta): Promise<TokenPair> {
    await this.#limit(this.ctx.rateLimits.login, meta.ip);
    const now = this.ctx.clock();
    const account = accountKey(this.ctx.secrets, env, input.email);
    const user = await users.findUserByEmail(this.ctx.pool, env, input.email);
    // Counted before the password is checked, known address or not (see lockout.ts).
    const attempt = await reserveLoginAttempt(
      this.ctx.pool,
      account,
      meta.ip,
      { threshold: env.lockoutThreshold, lockoutSeconds: env.lockoutSeconds },
      now,
    );
    if (!attempt.allowed) {
      this.#count('login_refused');
      throw locked(attempt.lockedUntil);
    }
    const right = user ? await verifyPassword(user.passwordHash, input.password) : await spendVerificationTime(input.password);
    if (!user || !right) {
      this.#count(attempt.lockedHere ? 'login_locked' : 'login_failed');
      // Known accounts only (an audit row per unknown address would be a table anyone can fill),
      // through statements that cost the same for unknown ones.
      await this.#audit(env, attempt.lockedHere ? EVENT.locked : EVENT.loginFailed, user?.id ?? null, meta, now);
      if (attempt.lockedHere) await users.markLocked(this.ctx.pool, user?.id ?? NOBODY, attempt.lockedHere);
      if (attempt.lockedHere) throw locked(attempt.lockedHere);
      throw new AppError('AUTH_INVALID_CREDENTIALS');
    }
    await recordLoginSuccess(this.ctx.pool, account, meta.ip, attempt.lockedHere, now);
    // Only someone who knows the password learns that the address is unconfirmed.
    if (!user.emailVerifiedAt) {
      this.#count('login_unverified');
      throw new AppError('AUTH_EMAIL_NOT_VERIFIED');
    }
    this.#count('login_ok');
    if (needsRehash(user.passwordHash)) await users.replacePasswordHash(this.ctx.pool, user.id, await hashPassword(input.password), now);
    return this.#startSession(env, user, now, meta, EVENT.loggedIn);
  }

  /**
   * Always the same answer, given before the address is even looked up; the code is made and
   * queued for mailing afterwards, off the request's path.
   */
  async recoverPassword(env: Environment, input: { email: string }, meta: Partial<RequestMeta> = {}) {
    await this.#limit(this.ctx.rateLimits.recoverPassword, emailKey(env, input.email));
    const now = this.ctx.clock();
    setImmediate(() => {
      void (async () => {
        const user = await users.findUserByEmail(this.ctx.pool, env, input.email);
        if (!user) return;
        await withTransaction(this.ctx.pool, async (c) => {
          await queueCodeMail(c, this.ctx.secrets, env, user, 'recovery', now);
          await append(c, env, { type: EVENT.recoveryRequested, userId: user.id, ...meta }, now);
        });
        this.ctx.courier.nudge();
      })().catch((err: unknown) => this.ctx.log.error({ err }, 'could not send a password recovery e-mail'));
    });
    return { message: MESSAGES.recover };
  }

  async resetPassword(env: Environment, input: { email: string; code: string; newPassword: string }, meta: RequestMeta) {
    // Cheap checks first: limits, the length rule, the code (one statement, known address or not);
    // the strength estimate and the hash only for the holder of a right code.
    await this.#limit(this.ctx.rateLimits.resetPasswordPerIp, meta.ip);
    await this.#limit(this.ctx.rateLimits.resetPasswordPerEmail, emailKey(env, input.email));
    const tooShortOrLong = lengthViolations(input.newPassword, 'newPassword');
    if (tooShortOrLong.length) throw validationError(tooShortOrLong, 'The password does not meet the policy.');
    const now = this.ctx.clock();
    const user = await users.findUserByEmail(this.ctx.pool, env, input.email);
    const matched = await matchCode(this.ctx.pool, this.ctx.secrets, user?.id ?? NOBODY, 'recovery', input.code, env.codeMaxAttempts, now);
    if (!user || !matched) throw new AppError('AUTH_INVALID_CODE');
    // A weak password keeps the code (minus the attempt): the user tries again with a better one.
    const violations = passwordViolations(input.newPassword, input.email, 'newPassword');
    if (violations.length) throw validationError(violations, 'The password does not meet the policy.');
    if (!(await takeCode(this.ctx.pool, user.id, 'recovery', matched))) throw new AppError('AUTH_INVALID_CODE');
    const passwordHash = await hashPassword(input.newPassword);
    const revoked = await withTransaction(this.ctx.pool, async (c) => {
      await users.resetPassword(c, user.id, passwordHash, now);
      await clearLoginFailures(c, accountKey(this.ctx.secrets, env, input.email));
      await append(c, env, { type: EVENT.passwordReset, userId: user.id, ...meta }, now);
      return revokeUserSessions(c, user.id, 'password reset', now);
    });
    await this.#revokeAccess(env, revoked, now);
    this.#count('reset_ok');
    return { message: MESSAGES.reset };
  }

  async refresh(env: Environment, input: { refreshToken: string }): Promise<TokenPair> {
    const now = this.ctx.clock();
    const outcome = await rotateRefreshToken(this.ctx.pool, input.refreshToken, env, env.refreshTokenTtlSeconds, now);
    if (outcome.kind === 'reused') {
      this.#count('refresh_reuse');
      await this.#revokeAccess(env, [outcome.sessionId], now);
      this.ctx.log.warn({ sessionId: outcome.sessionId }, 'a used refresh token was presented again: session revoked');
    }
    if (outcome.kind !== 'rotated') throw new AppError('AUTH_TOKEN_INVALID', 'The refresh token is invalid, expired or already used.');
    this.#count('refresh_ok');
    this.#profiles.delete(outcome.sessionId); // its expiry moved
    const access = await issueAccessToken(this.keys, env, {
      userId: outcome.userId,
      email: outcome.email,
      sessionId: outcome.sessionId,
      issuer: this.ctx.config.publicUrl,
      now,
      appMetadata: outcome.appMetadata,
    });
    return { accessToken: access.token, refreshToken: outcome.refreshToken, tokenType: 'Bearer', expiresIn: access.expiresIn };
  }

  /** The claims of a valid, unrevoked access token (every protected request goes through here). */
  async authenticate(env: Environment, authorization: string | undefined): Promise<AccessClaims> {
    const token = bearerToken(authorization);
    const now = this.ctx.clock();
    const skew = this.ctx.config.tokenClockSkewSeconds;
    const claims = await this.#verified.get(`${env.projectId}\0${env.name}\0${token}`, () =>
      verifyAccessToken(this.keys, env, token, this.ctx.config.publicUrl, now, skew),
    );
    if ((claims.exp + skew) * 1000 <= now.getTime()) throw new AppError('AUTH_TOKEN_EXPIRED');
    // A signature cannot say that the session was logged out: the revocation list can.
    if (await this.ctx.revocations.isRevoked(claims.sid)) throw new AppError('AUTH_TOKEN_INVALID', 'The token has been revoked.');
    return claims;
  }

  async logout(env: Environment, authorization: string | undefined, meta: Partial<RequestMeta> = {}) {
    const claims = await this.authenticate(env, authorization);
    const now = this.ctx.clock();
    await withTransaction(this.ctx.pool, async (c) => {
      await revokeSessionRow(c, claims.sid, 'logout', now);
      await append(c, env, { type: EVENT.loggedOut, userId: claims.sub, sessionId: claims.sid, ...meta }, now);
    });
    this.#profiles.delete(claims.sid);
    await this.#revokeAccess(env, [claims.sid], now);
    this.#count('logout');
    return { message: MESSAGES.logout };
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

  /** /auth/me shows the change at once (userMetadata was set). */
  forgetProfile(sessionId: string): void {
    this.#profiles.delete(sessionId);
  }

  async jwks(env: Environment) {
    const keys = await this.keys.publishedKeys(env);
    return { keys: keys.map((k) => k.publicJwk) };
  }

  async #startSession(env: Environment, user: users.User, now: Date, meta: RequestMeta, event = EVENT.loggedIn): Promise<TokenPair> {
    if (user.disabledAt) throw new AppError('AUTH_USER_DISABLED');
    const session = await withTransaction(this.ctx.pool, async (c) => {
      const created = await createSession(c, user.id, env, env.refreshTokenTtlSeconds, now);
      await append(c, env, { type: event, userId: user.id, sessionId: created.sessionId, ...meta }, now);
      return created;
    });
    const access = await issueAccessToken(this.keys, env, {
      userId: user.id,
      email: user.email,
      sessionId: session.sessionId,
      issuer: this.ctx.config.publicUrl,
      now,
      appMetadata: user.appMetadata,
    });
    return { accessToken: access.token, refreshToken: session.refreshToken, tokenType: 'Bearer', expiresIn: access.expiresIn };
  }

  /** An audit row for an outcome that changes nothing else (a failed login, a reused refresh token). */
  async #audit(env: Environment, type: AuthEventType, userId: string | null, meta: Partial<RequestMeta>, now: Date) {
    await appendIfUser(this.ctx.pool, env, { type, userId, ...meta }, now);
  }

  /** Access tokens of these sessions stop working now, although they would verify until they expire. */
  async #revokeAccess(env: Environment, sessionIds: string[], now: Date): Promise<void> {
    const until = new Date(now.getTime() + env.accessTokenTtlSeconds * 1000);
    for (const sid of sessionIds) await this.ctx.revocations.revoke(sid, until);
  }

  #count(event: string): void {
    this.ctx.metrics.authEvents.inc({ event });
  }

  async #limit(policy: RateLimitPolicy, key: string): Promise<void> {
    await enforceRateLimit(this.ctx.rateLimiter, policy, key);
  }
}

/** The per-e-mail limit key: an address counts per environment. */
function emailKey(env: Environment, email: string): string {
  return `${env.projectId}:${env.name}:${email}`;
}

function locked(until: Date): AppError {
  return new AppError('AUTH_ACCOUNT_LOCKED', undefined, { lockedUntil: until.toISOString() });
}
