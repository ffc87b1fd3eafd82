import type { SecretBox } from '../../core/crypto/secretbox.js';
import { withTransaction, type Pool } from '../../core/db/pool.js';
import { AppError } from '../../core/errors.js';
import { append, type EventOrigin } from '../events/append.js';
import { AUTH_EVENT } from '../events/kinds.js';
import * as factors from './factors.js';
import { dropRecoveryCodes } from './recovery-codes.js';
import { queueFactorChangeMail } from './notices.js';
import { factorView } from './view.js';
import * as users from '../users.js';

// Removing a factor, by its user (DELETE /auth/mfa/factors/{id}) or by an operator (the admin API,
// the console): one transaction with its audit row. The last factor takes the recovery codes
// with it, which would otherwise outlive what they recover. The user is told by e-mail (notices.ts),
// queued in the same transaction; the caller nudges the courier.

export async function removeFactor(
  pool: Pool,
  secrets: SecretBox,
  env: { projectId: string; name: string },
  userId: string,
  id: string,
  origin: EventOrigin,
  now: Date,
): Promise<void> {
  const removed = await withTransaction(pool, async (c) => {
    const gone = await factors.deleteFactor(c, userId, id);
    if (!gone) return false;
    await append(
      c,
      env,
      { type: AUTH_EVENT.mfaFactorRemoved, userId, ...origin, details: { factorId: gone.id, factorType: gone.type } },
      now,
    );
    if ((await factors.countActiveFactors(c, userId)) === 0) await dropRecoveryCodes(c, userId);
    const user = await users.findUserById(c, env, userId);
    if (user) await queueFactorChangeMail(c, secrets, env, user, 'removed', gone, now);
    return true;
  });
  if (!removed) throw new AppError('MFA_FACTOR_NOT_FOUND');
}

/** A user's active factors as the API shows them. */
export async function listFactorViews(pool: Pool, userId: string) {
  return (await factors.activeFactors(pool, userId)).map(factorView);
}
