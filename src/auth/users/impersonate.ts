import type { Context } from '../../core/context.js';
import { AppError } from '../../core/errors.js';
import type { Environment } from '../../projects/environments.js';
import type { EventOrigin } from '../events/append.js';
import { AUTH_EVENT } from '../events/kinds.js';
import type { SessionService, TokenPair } from '../sessions/service.js';
import { findUserById } from '../users.js';

// Impersonation: an operator (a management token) starts a session as a user, to see what they
// see. The session is time-boxed (it ends `durationSeconds` after it starts, refreshes or not);
// its tokens carry `act: {sub: "operator"}` and amr `impersonation` (tokens.ts), so resource
// servers can tell, and the routes that change how the user signs in refuse them
// (impersonation.ts). Its start is an audit row naming the management token; the user sees the
// session in `GET /auth/sessions` (`impersonated: true`) and can end it like any other.

export const IMPERSONATION_DEFAULT_SECONDS = 1800;
export const IMPERSONATION_MAX_SECONDS = 3600;

export class ImpersonationService {
  constructor(
    private readonly ctx: Context,
    private readonly sessions: SessionService,
  ) {}

  async start(
    env: Environment,
    userId: string,
    input: { durationSeconds?: number },
    operator: EventOrigin & { actor: string },
  ): Promise<TokenPair & { expiresAt: string }> {
    const user = await findUserById(this.ctx.pool, env, userId);
    if (!user) throw new AppError('USER_NOT_FOUND');
    const now = this.ctx.clock();
    const seconds = input.durationSeconds ?? IMPERSONATION_DEFAULT_SECONDS;
    // The session's row, its audit row (with the management token as actor) and the pair, as a login's.
    const pair = await this.sessions.start(env, user, { ip: operator.clientAddress ?? 'operator', ...operator }, now, {
      event: AUTH_EVENT.impersonationStarted,
      amr: ['impersonation'],
      lifetimeSeconds: seconds,
      actor: operator.actor,
    });
    this.ctx.metrics.authEvents.inc({ event: 'impersonation_started' });
    return { ...pair, expiresAt: new Date(now.getTime() + seconds * 1000).toISOString() };
  }
}
