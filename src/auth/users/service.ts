import { randomBytes } from 'node:crypto';
import { publishCacheEvent } from '../../core/cache-events.js';
import type { Context } from '../../core/context.js';
import { PgCode, pgCode, withTransaction, type Queryable } from '../../core/db/pool.js';
import { AppError, validationError } from '../../core/errors.js';
import { enqueueMail } from '../../core/mail/outbox.js';
import type { Environment } from '../../projects/environments.js';
import { issueCode } from '../codes.js';
import { append, type EventOrigin } from '../events/append.js';
import { AUTH_EVENT as EVENT, type AuthEventType } from '../events/kinds.js';
import { hasAuthEvents, listAuthEvents, type EventQuery } from '../events/store.js';
import { hashPassword, passwordViolations } from '../passwords.js';
import { listFactorViews, removeFactor } from '../mfa/remove.js';
import { revokeUserSessions } from '../sessions/store.js';
import { insertUser } from '../users.js';
import * as store from './store.js';
import { inviteMail } from './invite.js';
import { adminUserView, decodeEventCursor, decodeUserCursor, encodeEventCursor, encodeUserCursor, eventView } from './view.js';

// Operators' view of end users (the admin API and the CLI): every change appends its audit row,
// with the management token that made it, in the change's transaction.

export interface CreateUserInput {
  email: string;
  name?: string | null;
  password?: string;
  emailVerified?: boolean;
  /** No password: the user gets a code by e-mail to choose one (reset-password). */
  invite?: boolean;
  appMetadata?: Record<string, unknown>;
}

export interface UpdateUserInput {
  disabled?: boolean;
  emailVerified?: boolean;
  appMetadata?: Record<string, unknown>;
}

const PAGE = 50;

export class UserAdminService {
  constructor(private readonly ctx: Context) {}

  async list(env: Environment, q: { query?: string; status?: store.UserStatus; cursor?: string }) {
    const now = this.ctx.clock();
    const rows = await store.listUsers(
      this.ctx.pool,
      env,
      { query: q.query, status: q.status, cursor: q.cursor ? decodeUserCursor(q.cursor) : undefined, limit: PAGE + 1 },
      now,
    );
    const page = rows.slice(0, PAGE);
    const last = page.at(-1);
    return { users: page.map((u) => adminUserView(u, now)), nextCursor: rows.length > PAGE && last ? encodeUserCursor(last) : null };
  }

  async get(env: Environment, id: string) {
    const user = await this.#find(env, id);
    const [sessions, emails] = await Promise.all([store.userSessions(this.ctx.pool, id), store.userMails(this.ctx.pool, id)]);
    const factors = await listFactorViews(this.ctx.pool, id);
    // Identities join here when that capability exists.
    return { user: adminUserView(user, this.ctx.clock()), sessions, emails, factors, identities: [] };
  }

  async create(env: Environment, input: CreateUserInput, origin: EventOrigin) {
    if (!input.invite && !input.password) throw validationError([{ path: 'password', message: 'is required unless invite is true' }]);
    if (input.password) {
      const violations = passwordViolations(input.password, input.email);
      if (violations.length) throw validationError(violations, 'The password does not meet the policy.');
    }
    // An invited user has a password nobody knows until they choose one with the e-mailed code.
    const passwordHash = await hashPassword(input.password ?? randomSecret());
    const now = this.ctx.clock();
    try {
      const user = await withTransaction(this.ctx.pool, async (c) => {
        const created = await insertUser(
          c,
          env,
          {
            email: input.email,
            name: input.name ?? null,
            passwordHash,
            emailVerified: input.emailVerified,
            appMetadata: input.appMetadata,
          },
          now,
        );
        await this.#event(c, env, input.invite ? EVENT.invited : EVENT.created, created.id, origin, now, { email: created.email });
        if (input.invite) {
          const code = await issueCode(
            c,
            this.ctx.secrets,
            created.id,
            'recovery',
            new Date(now.getTime() + env.codeTtlSeconds * 1000),
            now,
          );
          const mail = inviteMail(created.email, code, Math.round(env.codeTtlSeconds / 60), env.projectId);
          await enqueueMail(
            c,
            this.ctx.secrets,
            { projectId: env.projectId, environment: env.name, userId: created.id, purpose: 'invite', mail },
            now,
          );
        }
        return created;
      });
      this.ctx.courier.nudge();
      return this.get(env, user.id);
    } catch (err) {
      if (pgCode(err) === PgCode.uniqueViolation) throw new AppError('AUTH_EMAIL_EXISTS');
      throw err;
    }
  }

  async update(env: Environment, id: string, change: UpdateUserInput, origin: EventOrigin) {
    const now = this.ctx.clock();
    const ended = await withTransaction(this.ctx.pool, async (c) => {
      // Read and locked in the transaction: two PATCHes at once decide their events in turn.
      const before = await this.#find(env, id, c);
      await store.updateUser(c, id, change, now);
      if (change.disabled === true && !before.disabledAt) await this.#event(c, env, EVENT.disabled, id, origin, now);
      if (change.disabled === false && before.disabledAt) await this.#event(c, env, EVENT.enabled, id, origin, now);
      if (change.emailVerified !== undefined && change.emailVerified !== (before.emailVerifiedAt !== null))
        await this.#event(c, env, EVENT.emailVerified, id, origin, now, { emailVerified: change.emailVerified });
      if (change.appMetadata) await this.#event(c, env, EVENT.metadataChanged, id, origin, now, { field: 'appMetadata' });
      // A disabled user's sessions end now: refresh is refused, and so is every live access token.
      return change.disabled === true ? this.#endSessions(c, env, id, 'user disabled', now) : [];
    });
    await this.#revokeLocally(env, ended, now);
    return this.get(env, id);
  }

  async delete(env: Environment, id: string, origin: EventOrigin): Promise<void> {
    await this.#find(env, id);
    const now = this.ctx.clock();
    const ended = await withTransaction(this.ctx.pool, async (c) => {
      const sessions = await this.#endSessions(c, env, id, 'user deleted', now);
      await this.#event(c, env, EVENT.deleted, id, origin, now);
      await store.deleteUser(c, id);
      return sessions;
    });
    await this.#revokeLocally(env, ended, now);
  }

  /** Removes one of the user's second factors (a lost phone or key); the user signs in without it. */
  async removeFactor(env: Environment, id: string, factorId: string, origin: EventOrigin): Promise<void> {
    await this.#find(env, id);
    await removeFactor(this.ctx.pool, this.ctx.secrets, env, id, factorId, origin, this.ctx.clock());
    this.ctx.courier.nudge();
  }

  /** Ends every session of the user; returns how many were live. */
  async logout(env: Environment, id: string, origin: EventOrigin): Promise<{ sessionsEnded: number }> {
    await this.#find(env, id);
    const now = this.ctx.clock();
    const ended = await withTransaction(this.ctx.pool, async (c) => {
      const sessions = await this.#endSessions(c, env, id, 'forced logout', now);
      for (const sessionId of sessions) await append(c, env, { type: EVENT.sessionRevoked, userId: id, sessionId, ...origin }, now);
      return sessions;
    });
    await this.#revokeLocally(env, ended, now);
    return { sessionsEnded: ended.length };
  }

  /** The user's own metadata (`PATCH /auth/me`): the caller is the user of a live access token. */
  async setUserMetadata(env: Environment, userId: string, userMetadata: Record<string, unknown>, origin: EventOrigin) {
    const now = this.ctx.clock();
    return withTransaction(this.ctx.pool, async (c) => {
      // The user deleted since their token was checked: no row, no event, and the token is dead.
      if (!(await store.findUser(c, env, userId, true))) throw new AppError('AUTH_TOKEN_INVALID');
      const user = await store.updateUser(c, userId, { userMetadata }, now);
      await this.#event(c, env, EVENT.metadataChanged, userId, origin, now, { field: 'userMetadata' });
      return user;
    });
  }

  async userEvents(env: Environment, id: string, q: Omit<EventQuery, 'userId' | 'limit' | 'cursor'> & { cursor?: string }) {
    // A deleted user's history stays readable until retention removes it: 404 is for an id with neither.
    if (!(await store.findUser(this.ctx.pool, env, id)) && !(await hasAuthEvents(this.ctx.pool, env, id)))
      throw new AppError('USER_NOT_FOUND');
    return this.events(env, { ...q, userId: id });
  }

  async events(env: Environment, q: Omit<EventQuery, 'limit' | 'cursor'> & { cursor?: string }) {
    const rows = await listAuthEvents(this.ctx.pool, env, {
      ...q,
      cursor: q.cursor ? decodeEventCursor(q.cursor) : undefined,
      limit: PAGE + 1,
    });
    const page = rows.slice(0, PAGE);
    const last = page.at(-1);
    return { events: page.map(eventView), nextCursor: rows.length > PAGE && last ? encodeEventCursor(last) : null };
  }

  /** The user of this environment with this e-mail (the CLI names users by address). */
  async idByEmail(env: Environment, email: string): Promise<string | undefined> {
    const { rows } = await this.ctx.pool.query<{ id: string }>(
      'SELECT id FROM walgate.users WHERE project_id = $1 AND environment = $2 AND email = $3',
      [env.projectId, env.name, email],
    );
    return rows[0]?.id;
  }

  /** The user, or 404; inside a transaction (`lockIn`), locked until it ends. */
  async #find(env: Environment, id: string, lockIn?: Queryable): Promise<store.ListedUser> {
    const user = await store.findUser(lockIn ?? this.ctx.pool, env, id, lockIn !== undefined);
    if (!user) throw new AppError('USER_NOT_FOUND');
    return user;
  }

  #event(
    db: Queryable,
    env: Environment,
    type: AuthEventType,
    userId: string,
    origin: EventOrigin,
    now: Date,
    details?: Record<string, unknown>,
  ) {
    return append(db, env, { type, userId, details, ...origin }, now);
  }

  /** Revokes the sessions in the transaction, and tells every api process (their revocation lists) at its commit. */
  async #endSessions(db: Queryable, env: Environment, userId: string, reason: string, now: Date): Promise<string[]> {
    const ended = await revokeUserSessions(db, userId, reason, now);
    if (ended.length) await publishCacheEvent(db, { kind: 'sessions', sessionIds: ended, until: this.#accessEnd(env, now).toISOString() });
    return ended;
  }

  async #revokeLocally(env: Environment, sessionIds: string[], now: Date): Promise<void> {
    for (const sid of sessionIds) await this.ctx.revocations.revoke(sid, this.#accessEnd(env, now));
  }

  #accessEnd(env: Environment, now: Date): Date {
    // As long as authenticate() may still accept a token: its lifetime plus the clock-skew grace.
    return new Date(now.getTime() + (env.accessTokenTtlSeconds + this.ctx.config.tokenClockSkewSeconds) * 1000);
  }
}

function randomSecret(): string {
  return randomBytes(32).toString('base64url');
}
