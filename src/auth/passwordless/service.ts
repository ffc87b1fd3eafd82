import type { Context } from '../../core/context.js';
import { withTransaction, type PoolClient } from '../../core/db/pool.js';
import { AppError } from '../../core/errors.js';
import type { Environment } from '../../projects/environments.js';
import type { AuthMethod } from '../assurance.js';
import { consumeCode } from '../codes.js';
import { append } from '../events/append.js';
import { AUTH_EVENT } from '../events/kinds.js';
import { spendLimit } from '../limits.js';
import { accountKey } from '../lockout.js';
import { queueCodeMail } from '../mail.js';
import type { MfaService, SignInClient } from '../mfa/service.js';
import type { MfaRequired } from '../mfa/view.js';
import { issueDeviceToken, trustedDevice } from '../sessions/devices.js';
import { origin, type TokenPair } from '../sessions/service.js';
import { enqueueMail } from '../../core/mail/outbox.js';
import * as users from '../users.js';
import { issueMagicLink, takeMagicLink } from './links.js';
import { magicLinkMail, magicLinkUrl } from './mail.js';
import { insertPasswordlessUser } from './signup.js';

// Passwordless sign-in: an e-mailed 6-digit code (`POST /auth/otp`, then `/auth/otp/verify`) or a
// magic link (`POST /auth/magic-link`, then the redirect page posts its token to
// `/auth/magic-link/verify`). Asking is answered at once and alike for any address, known or not
// (the lookup, the code and the mail happen after the answer, as for password recovery); the code
// has recovery's attempt budget and the requests recovery's per-client limits; and a right code or
// link ends like a password login — through the MFA step (mfa.finishSignIn), with a device token.

export const PASSWORDLESS_MESSAGES = {
  otp: 'If the address can sign in, a 6-digit code is on its way.',
  magicLink: 'If the address can sign in, a sign-in link is on its way.',
} as const;

/** An e-mailed code proves the mailbox: `otp`, said to have come by `email` (assurance.ts). */
const CODE_AMR: readonly AuthMethod[] = ['otp', 'email'];
const LINK_AMR: readonly AuthMethod[] = ['email'];

/** A user id that matches no row: unknown addresses run the same statements as known ones. */
const NOBODY = '00000000-0000-0000-0000-000000000000';

type Client = SignInClient & { deviceToken?: string };
type SignedIn = (TokenPair | MfaRequired) & { deviceToken: string };

const invalidLink = () => new AppError('AUTH_INVALID_CODE', 'The sign-in link is invalid, expired or already used: ask for a new one.');

export class PasswordlessService {
  constructor(
    private readonly ctx: Context,
    private readonly mfa: MfaService,
  ) {}

  async sendCode(env: Environment, input: { email: string }, client: Client) {
    await this.#allowAsking(env, 'otp', input.email, client);
    const now = this.ctx.clock();
    this.#afterAnswer(env, input.email, client, now, 'otp', async (c, user) => {
      await queueCodeMail(c, this.ctx.secrets, env, user, 'otp', now);
    });
    return { message: PASSWORDLESS_MESSAGES.otp };
  }

  async verifyCode(env: Environment, input: { email: string; code: string }, client: Client): Promise<SignedIn> {
    this.#enabled(env);
    await spendLimit(this.ctx, env, 'resetPasswordPerIp', `otp ${client.ip}`);
    await spendLimit(this.ctx, env, 'resetPasswordPerEmail', `otp ${input.email} ${client.ip}`);
    const now = this.ctx.clock();
    const user = await users.findUserByEmail(this.ctx.pool, env, input.email);
    const ok = await consumeCode(this.ctx.pool, this.ctx.secrets, user?.id ?? NOBODY, 'otp', input.code, env.codeMaxAttempts, now);
    if (!user || !ok) {
      this.#count('otp_failed');
      throw new AppError('AUTH_INVALID_CODE');
    }
    this.#count('otp_ok');
    return this.#signIn(env, user, CODE_AMR, client, now);
  }

  async sendMagicLink(env: Environment, input: { email: string; redirectTo: string }, client: Client) {
    this.#enabled(env);
    // Checked before anything else, and alike for any address: it says nothing about the account.
    if (!env.settings.passwordless.redirectUrls.includes(input.redirectTo)) {
      throw new AppError(
        'AUTH_REDIRECT_NOT_ALLOWED',
        "redirectTo is not one of the environment's passwordless.redirectUrls (the match is exact).",
      );
    }
    await this.#allowAsking(env, 'link', input.email, client);
    const now = this.ctx.clock();
    const minutes = Math.round(env.codeTtlSeconds / 60);
    this.#afterAnswer(env, input.email, client, now, 'magic_link', async (c, user) => {
      const token = await issueMagicLink(c, user.id, input.redirectTo, new Date(now.getTime() + env.codeTtlSeconds * 1000), now);
      const mail = magicLinkMail(user.email, magicLinkUrl(input.redirectTo, token), minutes, env.projectId);
      await enqueueMail(
        c,
        this.ctx.secrets,
        { projectId: env.projectId, environment: env.name, userId: user.id, purpose: 'magic_link', mail },
        now,
      );
    });
    return { message: PASSWORDLESS_MESSAGES.magicLink };
  }

  async verifyMagicLink(env: Environment, input: { token: string }, client: Client): Promise<SignedIn> {
    this.#enabled(env);
    await spendLimit(this.ctx, env, 'resetPasswordPerIp', `link ${client.ip}`);
    const now = this.ctx.clock();
    const userId = await takeMagicLink(this.ctx.pool, env, input.token, now);
    const user = userId && (await users.findUserById(this.ctx.pool, env, userId));
    if (!user) {
      this.#count('magic_link_failed');
      throw invalidLink();
    }
    this.#count('magic_link_ok');
    return this.#signIn(env, user, LINK_AMR, client, now);
  }

  /** Off unless the environment turns it on (`passwordless.enabled`). */
  #enabled(env: Environment): void {
    if (!env.settings.passwordless.enabled) throw new AppError('AUTH_PASSWORDLESS_DISABLED');
  }

  /** Recovery's limits, counted apart: per client address and per address asked for. */
  async #allowAsking(env: Environment, kind: 'otp' | 'link', email: string, client: Client): Promise<void> {
    this.#enabled(env);
    await spendLimit(this.ctx, env, 'recoverPasswordPerIp', `${kind} ${client.ip}`);
    await spendLimit(this.ctx, env, 'recoverPassword', `${kind} ${email}`);
  }

  /**
   * After the answer, off the request's path: the user (created when the environment allows
   * sign-up this way), the code or link with its e-mail, and the audit row, in one transaction.
   * A disabled user gets nothing.
   */
  #afterAnswer(
    env: Environment,
    email: string,
    client: Client,
    now: Date,
    method: 'otp' | 'magic_link',
    send: (c: PoolClient, user: users.User) => Promise<void>,
  ): void {
    setImmediate(() => {
      void (async () => {
        let user = await users.findUserByEmail(this.ctx.pool, env, email);
        if (user?.disabledAt) return;
        await withTransaction(this.ctx.pool, async (c) => {
          if (!user) {
            if (!env.settings.passwordless.signUp) return;
            user = await insertPasswordlessUser(c, env, email, now);
            if (!user) return; // signed up meanwhile by another request: that one mails
            await append(c, env, { type: AUTH_EVENT.signedUp, userId: user.id, ...origin(client), details: { email, method } }, now);
          }
          await send(c, user);
          await append(c, env, { type: AUTH_EVENT.passwordlessRequested, userId: user.id, ...origin(client), details: { method } }, now);
        });
        this.ctx.courier.nudge();
      })().catch((err: unknown) => this.ctx.log.error({ err, method }, 'could not send a passwordless e-mail'));
    });
  }

  /** A right code or link: the address is proven; then the same end as a password login. */
  async #signIn(env: Environment, found: users.User, amr: readonly AuthMethod[], client: Client, now: Date): Promise<SignedIn> {
    let user = found;
    if (!user.emailVerifiedAt) {
      user = await withTransaction(this.ctx.pool, async (c) => {
        await append(
          c,
          env,
          { type: AUTH_EVENT.emailVerified, userId: found.id, ...origin(client), details: { method: amr.join('+') } },
          now,
        );
        // Verified meanwhile by an operator or a concurrent sign-in: the user as found is right.
        return (await users.markVerified(c, found.id, now)) ?? found;
      });
    }
    const finished = await this.mfa.finishSignIn(env, { ...user, hasSecondFactor: found.hasSecondFactor }, client, now, { amr });
    const account = accountKey(this.ctx.secrets, env, user.email);
    const known = trustedDevice(this.ctx.secrets, account, client.deviceToken, {
      now,
      ttlSeconds: env.settings.deviceTokenTtlSeconds,
      passwordResetAt: user.passwordResetAt,
    });
    return { ...finished, deviceToken: known ? client.deviceToken! : issueDeviceToken(this.ctx.secrets, account, now) };
  }

  #count(event: string): void {
    this.ctx.metrics.authEvents.inc({ event });
  }
}
