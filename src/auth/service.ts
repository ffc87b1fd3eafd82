import type { Context } from '../core/context.js';
import { PgCode, pgCode, withTransaction } from '../core/db/pool.js';
import { AppError, validationError } from '../core/errors.js';
import type { Environment } from '../projects/environments.js';
import { consumeCode, matchCode, takeCode, type CodePurpose } from './codes.js';
import { append, appendIfUser } from './events/append.js';
import { AUTH_EVENT as EVENT } from './events/kinds.js';
import type { KeyRing } from './keyring.js';
import { spendLimit } from './limits.js';
import { accountKey, clearLoginFailures, deviceClient, recordLoginSuccess, reserveLoginAttempt } from './lockout.js';
import { queueCodeMail } from './mail.js';
import { dropMfaTokens } from './mfa/challenges.js';
import { MfaService } from './mfa/service.js';
import { activeOrganizationSource } from './organizations/active.js';
import { OrganizationService } from './organizations/service.js';
import type { MfaRequired } from './mfa/view.js';
import { hashPassword, lengthViolations, needsRehash, passwordViolations, spendVerificationTime, verifyPassword } from './passwords.js';
import { issueDeviceToken, trustedDevice } from './sessions/devices.js';
import { LOGOUT_MESSAGE, origin, SessionService, type TokenPair } from './sessions/service.js';
import type { AccessClaims } from './tokens.js';
import * as users from './users.js';

// The rules of authentication, whatever the transport (REST routes, GraphQL resolvers): every
// check, every timing precaution and every error lives here.

export const MESSAGES = {
  signup: 'Check your e-mail for a 6-digit code to confirm your address.',
  recover: 'If the address is registered, a 6-digit code to reset the password is on its way.',
  reset: 'Your password has been reset. Sign in with the new password.',
  logout: LOGOUT_MESSAGE,
  resend: 'If the address awaits confirmation, a new 6-digit code is on its way.',
} as const;

export interface RequestMeta {
  /** The client's key for per-IP limits and lockouts (IPv6: its /64). */
  ip: string;
  /** The client's own address, for the audit trail. */
  clientAddress?: string | null;
  userAgent?: string | null;
  /** The `X-Device-Token` header of a client that logged in to the account before. */
  deviceToken?: string;
}

/** A user id that matches no row: unknown addresses run the same statements as known ones. */
const NOBODY = '00000000-0000-0000-0000-000000000000';

export class AuthService {
  /** Refresh, access checks, logout and the user's own sessions (src/auth/sessions/). */
  readonly sessions: SessionService;
  /** Second factors and passkeys (src/auth/mfa/); `mfa.finishSignIn` ends every sign-in. */
  readonly mfa: MfaService;
  /** Organizations, members and invitations (src/auth/organizations/); sessions carry the active one. */
  readonly organizations: OrganizationService;

  constructor(
    private readonly ctx: Context,
    readonly keys: KeyRing,
  ) {
    this.sessions = new SessionService(ctx, keys, activeOrganizationSource(ctx.pool));
    this.organizations = new OrganizationService(ctx, this.sessions);
    this.mfa = new MfaService(ctx, this.sessions);
  }

  async signup(env: Environment, input: { email: string; password: string; name?: string | null }, meta: RequestMeta) {
    // Cheap checks first (limit, a taken address), then the expensive ones.
    await spendLimit(this.ctx, env, 'signup', meta.ip);
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
        await append(c, env, { type: EVENT.signedUp, userId: created.id, ...origin(meta), details: { email: created.email } }, now);
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

  /**
   * A right code verifies the address and signs the user in through the same gate as a password
   * login (mfa.finishSignIn): a user with a second factor gets the MFA step, never a pair, and the
   * session's amr says what the code proved (`email`), never a password. An address that is
   * verified already is refused exactly like a wrong code: a code mailed before an operator
   * verified the address (or re-sent after one unverified it) must not be a way in.
   */
  async confirmSignup(
    env: Environment,
    input: { email: string; code: string },
    meta: RequestMeta,
  ): Promise<((TokenPair & { user: users.UserView }) | MfaRequired) & { deviceToken?: string }> {
    await spendLimit(this.ctx, env, 'confirmSignupPerIp', meta.ip);
    await spendLimit(this.ctx, env, 'confirmSignupPerEmail', `${input.email} ${meta.ip}`);
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
    // Verified only if it was not already (markVerified's condition), with its audit row.
    const verified =
      user && confirmed && !user.emailVerifiedAt
        ? await withTransaction(this.ctx.pool, async (c) => {
            const changed = await users.markVerified(c, user.id, now);
            if (changed) await append(c, env, { type: EVENT.confirmed, userId: user.id, ...origin(meta) }, now);
            return changed;
          })
        : undefined;
    if (!verified) {
      this.#count('confirm_failed');
      throw new AppError('AUTH_INVALID_CODE');
    }
    this.#count('confirm_ok');
    const finished = await this.mfa.finishSignIn(env, verified, meta, now, { amr: ['email'] });
    // The MFA step carries no device token: the code proved the mailbox, not the password.
    if ('mfaRequired' in finished) return finished;
    const deviceToken = issueDeviceToken(this.ctx.secrets, accountKey(this.ctx.secrets, env, input.email), now);
    return { ...finished, deviceToken, user: users.userView(verified) };
  }

  async login(
    env: Environment,
    input: { email: string; password: string },
    meta: RequestMeta,
  ): Promise<(TokenPair | MfaRequired) & { deviceToken: string }> {
    await spendLimit(this.ctx, env, 'login', meta.ip);
    const now = this.ctx.clock();
    const account = accountKey(this.ctx.secrets, env, input.email);
    const user = await users.findUserByEmail(this.ctx.pool, env, input.email);
    // A known device is judged by its own failures only; anyone else by their address's and the account's.
    const device = trustedDevice(this.ctx.secrets, account, meta.deviceToken, {
      now,
      ttlSeconds: env.settings.deviceTokenTtlSeconds,
      passwordResetAt: user?.passwordResetAt,
    });
    const client = device ? deviceClient(device) : meta.ip;
    // Counted before the password is checked, known address or not (see lockout.ts).
    const attempt = await reserveLoginAttempt(
      this.ctx.pool,
      account,
      client,
      { threshold: env.lockoutThreshold, lockoutSeconds: env.lockoutSeconds },
      now,
      device !== undefined,
    );
    if (!attempt.allowed) {
      this.#count('login_refused');
      throw locked(attempt.lockedUntil);
    }
    const right = user ? await verifyPassword(user.passwordHash, input.password) : await spendVerificationTime(input.password);
    if (!user || !right) {
      this.#count(attempt.lockedHere ? 'login_locked' : 'login_failed');
      // Known accounts only (an audit row per unknown address would be a table anyone can fill),
      // through the same statements for unknown ones, and after the answer: a row written for a
      // known address and none for an unknown one would otherwise differ in time and name it.
      this.#afterAnswer(() => this.#recordFailure(env, user?.id ?? null, attempt.lockedHere, meta, now));
      if (attempt.lockedHere) throw locked(attempt.lockedHere);
      throw new AppError('AUTH_INVALID_CREDENTIALS');
    }
    const succeeded = recordLoginSuccess(this.ctx.pool, account, client, attempt.lockedHere, now);
    succeeded.catch(() => undefined); // awaited below; a failure before that must not go unhandled
    // Only someone who knows the password learns that the address is unconfirmed.
    if (!user.emailVerifiedAt) {
      await succeeded;
      this.#count('login_unverified');
      throw new AppError('AUTH_EMAIL_NOT_VERIFIED');
    }
    this.#count('login_ok');
    if (needsRehash(user.passwordHash)) await users.replacePasswordHash(this.ctx.pool, user.id, await hashPassword(input.password), now);
    // The counts start again while the session starts (two statements at once, not one after the other).
    const [finished] = await Promise.all([this.mfa.finishSignIn(env, user, meta, now), succeeded]);
    // A user with a second factor gets the MFA step instead of a pair (mfa/service.ts) — with the
    // device token all the same: it only says that this client knew the password (its own failures
    // judge it from now on, the account-wide lock does not), which is proven here either way.
    return { ...finished, deviceToken: device ? meta.deviceToken! : issueDeviceToken(this.ctx.secrets, account, now) };
  }

  /**
   * Always the same answer, given before the address is even looked up; the code is made and
   * queued for mailing afterwards, off the request's path.
   */
  async recoverPassword(env: Environment, input: { email: string }, meta: RequestMeta) {
    await this.#mailNewCode(env, input.email, meta, 'recovery', (user) => user !== undefined);
    return { message: MESSAGES.recover };
  }

  /** A new signup code for an address that awaits confirmation; the same answer for any other. */
  async resendConfirmation(env: Environment, input: { email: string }, meta: RequestMeta) {
    await this.#mailNewCode(env, input.email, meta, 'signup', (user) => user !== undefined && !user.emailVerifiedAt);
    return { message: MESSAGES.resend };
  }

  /**
   * Limited per client address and per e-mail; the code is made and queued for mailing after the
   * answer, off the request's path, so the answer says nothing of the address.
   */
  async #mailNewCode(env: Environment, email: string, meta: RequestMeta, purpose: CodePurpose, wanted: (user?: users.User) => boolean) {
    await spendLimit(this.ctx, env, 'recoverPasswordPerIp', `${purpose} ${meta.ip}`);
    await spendLimit(this.ctx, env, 'recoverPassword', `${purpose} ${email}`);
    const now = this.ctx.clock();
    setImmediate(() => {
      void (async () => {
        const user = await users.findUserByEmail(this.ctx.pool, env, email);
        if (!user || !wanted(user)) return;
        await withTransaction(this.ctx.pool, async (c) => {
          await queueCodeMail(c, this.ctx.secrets, env, user, purpose, now);
          if (purpose === 'recovery') await append(c, env, { type: EVENT.recoveryRequested, userId: user.id, ...origin(meta) }, now);
        });
        this.ctx.courier.nudge();
      })().catch((err: unknown) => this.ctx.log.error({ err, purpose }, 'could not send a code e-mail'));
    });
  }

  async resetPassword(env: Environment, input: { email: string; code: string; newPassword: string }, meta: RequestMeta) {
    // Cheap checks first: limits, the length rule, the code (one statement, known address or not);
    // the strength estimate and the hash only for the holder of a right code.
    await spendLimit(this.ctx, env, 'resetPasswordPerIp', meta.ip);
    await spendLimit(this.ctx, env, 'resetPasswordPerEmail', `${input.email} ${meta.ip}`);
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
    // Everything the old password earned ends with it: sessions, MFA steps begun with it
    // (mfaTokens), and device tokens issued until now (users.password_reset_at, sessions/devices.ts).
    const revoked = await withTransaction(this.ctx.pool, async (c) => {
      await users.resetPassword(c, user.id, passwordHash, now);
      await clearLoginFailures(c, accountKey(this.ctx.secrets, env, input.email));
      await dropMfaTokens(c, user.id);
      await append(c, env, { type: EVENT.passwordReset, userId: user.id, ...origin(meta) }, now);
      return this.sessions.endAll(env, user.id, 'password reset', now, c);
    });
    await this.sessions.revokeAccess(env, revoked, now);
    this.#count('reset_ok');
    return { message: MESSAGES.reset };
  }

  /** The claims of a valid, unrevoked access token (sessions/service.ts). */
  authenticate(env: Environment, authorization: string | undefined): Promise<AccessClaims> {
    return this.sessions.authenticate(env, authorization);
  }

  async jwks(env: Environment) {
    const keys = await this.keys.publishedKeys(env);
    return { keys: keys.map((k) => k.publicJwk) };
  }

  /** /auth/me shows the change at once (userMetadata was set). */
  forgetProfile(sessionId: string): void {
    this.sessions.forgetProfile(sessionId);
  }

  /** A failed login's audit row, and the lock it set (what operators filter on), together. */
  async #recordFailure(env: Environment, userId: string | null, lockedUntil: Date | null, meta: RequestMeta, now: Date) {
    await withTransaction(this.ctx.pool, async (c) => {
      await appendIfUser(c, env, { type: lockedUntil ? EVENT.locked : EVENT.loginFailed, userId, ...origin(meta) }, now);
      if (lockedUntil) await users.markLocked(c, userId ?? NOBODY, lockedUntil);
    });
  }

  /** Work that must not delay, or show in, the answer; a failure is logged. */
  #afterAnswer(work: () => Promise<void>): void {
    setImmediate(() => void work().catch((err: unknown) => this.ctx.log.error({ err }, 'could not record an auth event')));
  }

  #count(event: string): void {
    this.ctx.metrics.authEvents.inc({ event });
  }
}

function locked(until: Date): AppError {
  return new AppError('AUTH_ACCOUNT_LOCKED', undefined, { lockedUntil: until.toISOString() });
}
