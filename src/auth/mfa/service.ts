import type { Context } from '../../core/context.js';
import { PgCode, pgCode, withTransaction, type Queryable } from '../../core/db/pool.js';
import { AppError } from '../../core/errors.js';
import type { Environment } from '../../projects/environments.js';
import type { AuthMethod } from '../assurance.js';
import { append, type EventOrigin } from '../events/append.js';
import { AUTH_EVENT, type AuthEventType } from '../events/kinds.js';
import { spendLimit } from '../limits.js';
import { origin, type SessionService, type TokenPair } from '../sessions/service.js';
import { sessionStartedAt, type SessionClient } from '../sessions/store.js';
import type { AccessClaims } from '../tokens.js';
import { refuseImpersonation } from '../impersonation.js';
import * as users from '../users.js';
import { issueMfaToken, spendMfaAttempt, takeMfaToken, type MfaStep } from './challenges.js';
import * as factors from './factors.js';
import { normaliseRecoveryCode, RECOVERY_CODE, replaceRecoveryCodes, unusedRecoveryCodes, useRecoveryCode } from './recovery-codes.js';
import { queueFactorChangeMail } from './notices.js';
import { removeFactor } from './remove.js';
import { newTotpSecret, TOTP_SECRET_PURPOSE, totpStep } from './totp.js';
import { factorView, type MfaRequired } from './view.js';
import * as webauthn from './webauthn.js';
import type { AuthenticationResponseJSON, RegistrationResponseJSON } from '@simplewebauthn/server';

// Second factors: enrolling and removing them, the step between a right password and a session,
// and passkeys (as a second factor, and as a sign-in of their own). Every change appends its
// audit row and queues its e-mail to the user in its own transaction.
//
// What a change of factors needs: the first factor may be enrolled with the token the user has
// (aal1 — in `mfa: required` environments that is the only way to get one); once a factor exists,
// adding another, removing one or renewing recovery codes needs a session that proved a second
// factor (aal2) within `mfaReauthSeconds`. So a stolen password, an old aal1 token or a session
// left open on a shared computer cannot take over (or strip) the second factor.

export type SignInClient = SessionClient & EventOrigin & { ip: string };

const invalidCode = () => new AppError('AUTH_INVALID_CODE');
const refusedPasskey = () => new AppError('AUTH_INVALID_CODE', 'The passkey answer was not accepted: sign in again.');
const reauthenticate = () =>
  new AppError(
    'AUTH_MFA_REQUIRED',
    'Changing second factors needs a session that signed in with a second factor in the last few minutes: sign in with it again.',
  );
const deadMfaToken = () =>
  new AppError('AUTH_TOKEN_INVALID', 'The mfaToken is invalid, expired, used, or out of tries: sign in again with your password.');

export class MfaService {
  constructor(
    private readonly ctx: Context,
    private readonly sessions: SessionService,
  ) {}

  /**
   * Finishes a sign-in whose first factor has been checked (a password, or a provider's word):
   * the token pair, or — for a user with an active second factor — the MFA step, whose mfaToken
   * `POST /auth/mfa/challenge` (or a passkey) exchanges for the pair. Every sign-in path calls
   * this, so none can skip the second factor.
   */
  async finishSignIn(
    env: Environment,
    user: users.User,
    client: SignInClient,
    now: Date,
    { amr = ['pwd'], event }: { amr?: readonly AuthMethod[]; event?: AuthEventType } = {},
  ): Promise<TokenPair | MfaRequired> {
    const active = user.hasSecondFactor === false ? [] : await factors.activeFactors(this.ctx.pool, user.id);
    if (active.length === 0) return this.sessions.start(env, user, client, now, { amr, event });
    if (user.disabledAt) throw new AppError('AUTH_USER_DISABLED');
    const mfaToken = await issueMfaToken(this.ctx.pool, env, user.id, amr, now);
    this.#count('mfa_required');
    return { mfaRequired: true, mfaToken, factors: active.map((f) => ({ id: f.id, type: f.type })) };
  }

  /** `{mfaToken, factorId, code}`: a TOTP code of the factor, or a recovery code → the pair. */
  async challenge(
    env: Environment,
    input: { mfaToken: string; factorId?: string; code: string },
    client: SignInClient,
  ): Promise<TokenPair> {
    await spendLimit(this.ctx, env, 'mfaChallengePerIp', client.ip);
    const now = this.ctx.clock();
    const step = await spendMfaAttempt(this.ctx.pool, env, input.mfaToken, now);
    if (!step) throw deadMfaToken();
    // Guesses per user, whoever sends them (many mfaTokens of one user do not multiply them).
    await spendLimit(this.ctx, env, 'mfaChallengePerUser', step.userId);
    const method = await this.#checkSecondFactor(env, step, input, client, now);
    if (!method) {
      this.#count('mfa_challenge_failed');
      await this.#recordFailure(env, step.userId, /^[0-9]{6}$/.test(input.code.trim()) ? 'otp' : 'recovery', client, now);
      throw invalidCode();
    }
    return this.#finishStep(env, step, input.mfaToken, method, client, now);
  }

  /** Checks the code and, when right, uses it up (with its audit row); the method it proves. */
  async #checkSecondFactor(
    env: Environment,
    step: MfaStep,
    input: { factorId?: string; code: string },
    client: EventOrigin,
    now: Date,
  ): Promise<AuthMethod | undefined> {
    const code = input.code.trim();
    if (RECOVERY_CODE.test(normaliseRecoveryCode(code)) && !/^[0-9]{6}$/.test(code)) {
      return withTransaction(this.ctx.pool, async (c) => {
        if (!(await useRecoveryCode(c, this.ctx.secrets, step.userId, code, now))) return undefined;
        const left = await unusedRecoveryCodes(c, step.userId);
        await append(c, env, { type: AUTH_EVENT.recoveryCodeUsed, userId: step.userId, ...origin(client), details: { left } }, now);
        return 'recovery' as const;
      });
    }
    if (!input.factorId) return undefined;
    const factor = await factors.findUserFactor(this.ctx.pool, step.userId, input.factorId);
    if (!factor || factor.type !== 'totp' || factor.status !== 'active') return undefined;
    return (await this.#acceptTotp(factor, code, false, now)) ? 'otp' : undefined;
  }

  async #acceptTotp(factor: factors.Factor, code: string, activate: boolean, now: Date, db: Queryable = this.ctx.pool): Promise<boolean> {
    const key = this.ctx.secrets.open(factor.totpSecret!, TOTP_SECRET_PURPOSE);
    const matched = totpStep(key, code, now);
    return matched !== undefined && factors.acceptTotpStep(db, factor.id, matched, activate, now);
  }

  /** A wrong second factor is an audit event (`user.mfa_failed`): guesses show in the trail, not only in a metric. */
  async #recordFailure(env: Environment, userId: string, method: AuthMethod, client: EventOrigin, now: Date): Promise<void> {
    await append(this.ctx.pool, env, { type: AUTH_EVENT.mfaFailed, userId, ...origin(client), details: { method } }, now);
  }

  /** A right second factor: the mfaToken is taken (by one request only) and the session starts. */
  async #finishStep(env: Environment, step: MfaStep, mfaToken: string, method: AuthMethod, client: SignInClient, now: Date) {
    if (!(await takeMfaToken(this.ctx.pool, mfaToken))) throw deadMfaToken();
    const user = await users.findUserById(this.ctx.pool, env, step.userId);
    if (!user) throw deadMfaToken();
    this.#count(`mfa_${method}`);
    return this.sessions.start(env, user, client, now, { amr: [...(step.amr as AuthMethod[]), method] });
  }

  async enrollTotp(env: Environment, authorization: string | undefined, input: { name?: string | null }) {
    const claims = await this.#changer(env, authorization);
    await this.#mayChangeFactors(this.ctx.pool, env, claims);
    const user = await this.#user(env, claims);
    const secret = await newTotpSecret(env.projectId, user.email);
    const sealed = this.ctx.secrets.seal(secret.key, TOTP_SECRET_PURPOSE);
    const factorId = await factors.insertPendingTotp(this.ctx.pool, env, user.id, sealed, input.name ?? null, this.ctx.clock());
    // The only time the secret leaves walgate.
    return { factorId, secret: secret.base32, otpauthUrl: secret.otpauthUrl, qrSvg: secret.qrSvg };
  }

  /** The first right code activates the factor; the user's first factor comes with recovery codes. */
  async verifyTotp(env: Environment, authorization: string | undefined, input: { factorId: string; code: string }, client: EventOrigin) {
    const claims = await this.#changer(env, authorization);
    await this.#mayChangeFactors(this.ctx.pool, env, claims);
    await spendLimit(this.ctx, env, 'mfaChallengePerUser', claims.sub);
    const now = this.ctx.clock();
    const factor = await factors.findUserFactor(this.ctx.pool, claims.sub, input.factorId);
    if (!factor || factor.type !== 'totp') throw new AppError('MFA_FACTOR_NOT_FOUND');
    if (factor.status !== 'pending') throw invalidCode();
    const added = await this.#addFactor(env, claims, client, now, async (c) =>
      (await this.#acceptTotp(factor, input.code.trim(), true, now, c)) ? { ...factor, status: 'active' as const } : undefined,
    );
    if (!added) throw invalidCode();
    return { factor: factorView({ ...factor, status: 'active' }), recoveryCodes: added.codes };
  }

  /**
   * Adds a factor (`add` activates or inserts it, or answers undefined) in one transaction with
   * its audit row, its e-mail and — for the user's only factor — a fresh set of recovery codes.
   * Whether the caller may is decided again under the user's factor lock, so two first
   * enrolments at once cannot both pass as the first.
   */
  async #addFactor(
    env: Environment,
    claims: AccessClaims,
    client: EventOrigin,
    now: Date,
    add: (c: Queryable) => Promise<factors.Factor | undefined>,
  ): Promise<{ codes: string[] | undefined } | undefined> {
    const result = await withTransaction(this.ctx.pool, async (c) => {
      await factors.lockUserFactors(c, claims.sub);
      await this.#mayChangeFactors(c, env, claims);
      const factor = await add(c);
      if (!factor) return undefined;
      const event = {
        type: AUTH_EVENT.mfaFactorAdded,
        userId: claims.sub,
        ...origin(client),
        details: { factorId: factor.id, factorType: factor.type },
      };
      await append(c, env, event, now);
      const user = await users.findUserById(c, env, claims.sub);
      if (user) await queueFactorChangeMail(c, this.ctx.secrets, env, user, 'added', factor, now);
      if ((await factors.countActiveFactors(c, claims.sub)) > 1) return { codes: undefined };
      return { codes: await replaceRecoveryCodes(c, this.ctx.secrets, claims.sub, now) };
    });
    if (result) this.ctx.courier.nudge();
    return result;
  }

  async listFactors(env: Environment, authorization: string | undefined) {
    const claims = await this.#caller(env, authorization);
    const [active, left] = await Promise.all([
      factors.activeFactors(this.ctx.pool, claims.sub),
      unusedRecoveryCodes(this.ctx.pool, claims.sub),
    ]);
    return { factors: active.map(factorView), recoveryCodesLeft: left };
  }

  /** Needs a token with a second factor (aal2): a stolen password alone cannot remove one. */
  async deleteFactor(env: Environment, authorization: string | undefined, id: string, client: EventOrigin) {
    const claims = await this.#secondFactorCaller(env, authorization);
    await removeFactor(this.ctx.pool, this.ctx.secrets, env, claims.sub, id, origin(client), this.ctx.clock());
    this.ctx.courier.nudge();
    return { message: 'The factor has been removed.' };
  }

  async regenerateRecoveryCodes(env: Environment, authorization: string | undefined, client: EventOrigin) {
    const claims = await this.#secondFactorCaller(env, authorization);
    const now = this.ctx.clock();
    const recoveryCodes = await withTransaction(this.ctx.pool, async (c) => {
      await append(c, env, { type: AUTH_EVENT.recoveryCodesRegenerated, userId: claims.sub, ...origin(client) }, now);
      return replaceRecoveryCodes(c, this.ctx.secrets, claims.sub, now);
    });
    return { recoveryCodes };
  }

  async passkeyRegisterOptions(env: Environment, authorization: string | undefined) {
    const claims = await this.#changer(env, authorization);
    await this.#mayChangeFactors(this.ctx.pool, env, claims);
    const user = await this.#user(env, claims);
    const existing = await factors.activeFactors(this.ctx.pool, user.id);
    return webauthn.registrationOptions(this.ctx.pool, env, this.#rp(env), user, existing, this.ctx.clock());
  }

  async passkeyRegisterVerify(
    env: Environment,
    authorization: string | undefined,
    input: { response: RegistrationResponseJSON; name?: string | null },
    client: EventOrigin,
  ) {
    const claims = await this.#changer(env, authorization);
    await this.#mayChangeFactors(this.ctx.pool, env, claims);
    const now = this.ctx.clock();
    const taken = await webauthn.takeChallenge(this.ctx.pool, env, input.response.response.clientDataJSON, 'register', now);
    if (!taken || taken.userId !== claims.sub) throw refusedPasskey();
    const credential = await webauthn.checkRegistration(input.response, taken.challenge, this.#rp(env));
    if (!credential) throw refusedPasskey();
    let factor: factors.Factor | undefined;
    let added: { codes: string[] | undefined } | undefined;
    try {
      added = await this.#addFactor(env, claims, client, now, async (c) => {
        factor = await factors.insertPasskey(
          c,
          env,
          claims.sub,
          {
            credentialId: credential.id,
            publicKey: Buffer.from(credential.publicKey),
            counter: credential.counter,
            transports: credential.transports ?? [],
            name: input.name ?? null,
          },
          now,
        );
        return factor;
      });
    } catch (err) {
      if (pgCode(err) === PgCode.uniqueViolation) throw refusedPasskey(); // this passkey is registered already
      throw err;
    }
    if (!added || !factor) throw refusedPasskey();
    return { factor: factorView(factor), recoveryCodes: added.codes };
  }

  /** Options for navigator.credentials.get(): any passkey of the site, or — with an mfaToken — its user's. */
  async passkeyLoginOptions(env: Environment, input: { mfaToken?: string }, client: SignInClient) {
    await spendLimit(this.ctx, env, 'passkeyLoginPerIp', client.ip);
    const now = this.ctx.clock();
    let forUser: { id: string; passkeys: factors.Factor[] } | undefined;
    if (input.mfaToken) {
      const step = await spendMfaAttempt(this.ctx.pool, env, input.mfaToken, now);
      if (!step) throw deadMfaToken();
      const passkeys = (await factors.activeFactors(this.ctx.pool, step.userId)).filter((f) => f.type === 'webauthn');
      forUser = { id: step.userId, passkeys };
    }
    return webauthn.authenticationOptions(this.ctx.pool, env, this.#rp(env), forUser, now);
  }

  /** A passkey's assertion: the pair (passwordless, amr `webauthn`), or the second factor of an mfaToken. */
  async passkeyLoginVerify(env: Environment, input: { response: AuthenticationResponseJSON; mfaToken?: string }, client: SignInClient) {
    await spendLimit(this.ctx, env, 'passkeyLoginPerIp', client.ip);
    const now = this.ctx.clock();
    const taken = await webauthn.takeChallenge(this.ctx.pool, env, input.response.response.clientDataJSON, 'login', now);
    if (!taken) throw refusedPasskey();
    const passkey = await factors.findPasskey(this.ctx.pool, env, input.response.id);
    if (!passkey || passkey.status !== 'active') throw refusedPasskey();
    // A challenge handed out for one user's second factor is answered by that user's passkey only,
    // and the user handle the authenticator reports (the user id at registration) must be its user's.
    if (taken.userId !== null && taken.userId !== passkey.userId) throw refusedPasskey();
    const handle = input.response.response.userHandle;
    if (handle !== undefined && Buffer.from(handle, 'base64url').toString('utf8') !== passkey.userId) throw refusedPasskey();
    let step: MfaStep | undefined;
    if (input.mfaToken) {
      step = await spendMfaAttempt(this.ctx.pool, env, input.mfaToken, now);
      if (!step) throw deadMfaToken();
      if (step.userId !== passkey.userId) throw refusedPasskey();
    } else if (taken.userId !== null) {
      throw refusedPasskey();
    }
    // Passwordless, the passkey is the whole proof: it must have verified its user (PIN, biometrics).
    const counter = await webauthn.checkAssertion(input.response, taken.challenge, this.#rp(env), passkey, !step);
    if (counter === undefined || !(await factors.advancePasskeyCounter(this.ctx.pool, passkey.id, counter, now))) {
      this.#count('passkey_refused');
      if (step) await this.#recordFailure(env, step.userId, 'webauthn', client, now);
      throw refusedPasskey();
    }
    if (step) return this.#finishStep(env, step, input.mfaToken!, 'webauthn', client, now);
    const user = await users.findUserById(this.ctx.pool, env, passkey.userId);
    if (!user) throw refusedPasskey();
    this.#count('passkey_login');
    return this.sessions.start(env, user, client, now, { amr: ['webauthn'] });
  }

  /** The caller of an enrolment or the factor list: in `mfa: required` environments, one without a factor yet. */
  #caller(env: Environment, authorization: string | undefined): Promise<AccessClaims> {
    return this.sessions.authenticate(env, authorization, { firstFactorEnough: true });
  }

  /** The caller of a change to the user's factors: never an operator's impersonation session. */
  async #changer(env: Environment, authorization: string | undefined): Promise<AccessClaims> {
    const claims = await this.#caller(env, authorization);
    refuseImpersonation(claims);
    return claims;
  }

  /** Removing a factor, renewing recovery codes: always a recent second factor. */
  async #secondFactorCaller(env: Environment, authorization: string | undefined): Promise<AccessClaims> {
    const claims = await this.sessions.authenticate(env, authorization);
    refuseImpersonation(claims);
    if (claims.aal !== 'aal2')
      throw new AppError('AUTH_MFA_REQUIRED', 'This needs a session that began with a second factor: sign in with it first.');
    if (!(await this.#recentSecondFactor(this.ctx.pool, env, claims))) throw reauthenticate();
    return claims;
  }

  /** Adding a factor: anyone signed in while they have none; a recent second factor once they have one. */
  async #mayChangeFactors(db: Queryable, env: Environment, claims: AccessClaims): Promise<void> {
    if ((await factors.countActiveFactors(db, claims.sub)) === 0) return;
    if (claims.aal !== 'aal2')
      throw new AppError('AUTH_MFA_REQUIRED', 'You have a second factor: adding another needs a session that signed in with it.');
    if (!(await this.#recentSecondFactor(db, env, claims))) throw reauthenticate();
  }

  /** An aal2 session that began (the second factor was shown) within `mfaReauthSeconds`. */
  async #recentSecondFactor(db: Queryable, env: Environment, claims: AccessClaims): Promise<boolean> {
    if (claims.aal !== 'aal2') return false;
    const startedAt = await sessionStartedAt(db, claims.sub, claims.sid);
    return startedAt !== undefined && this.ctx.clock().getTime() - startedAt.getTime() <= env.settings.mfaReauthSeconds * 1000;
  }

  async #user(env: Environment, claims: AccessClaims): Promise<users.User> {
    const user = await users.findUserById(this.ctx.pool, env, claims.sub);
    if (!user) throw new AppError('AUTH_TOKEN_INVALID');
    return user;
  }

  #rp(env: Environment) {
    return webauthn.relyingParty(env, this.ctx.config.publicUrl);
  }

  #count(event: string): void {
    this.ctx.metrics.authEvents.inc({ event });
  }
}
