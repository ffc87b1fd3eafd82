import type { SecretBox } from '../../core/crypto/secretbox.js';
import type { Queryable } from '../../core/db/pool.js';
import type { Mail } from '../../core/mail/mailer.js';
import { enqueueMail } from '../../core/mail/outbox.js';
import type { FactorType } from './factors.js';

// The e-mail that tells a user their second factors changed. Whoever holds a session could be
// someone else: the owner hears of it at their address, from the outbox, in the transaction of the
// change (a factor is never added or removed without its notice on its way).

export type FactorChange = 'added' | 'removed';

const KIND: Record<FactorType, string> = { totp: 'authenticator app', webauthn: 'passkey' };
const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

export function factorChangeMail(
  change: FactorChange,
  to: string,
  factor: { type: FactorType; name: string | null },
  projectId: string,
): Mail {
  const what = `${KIND[factor.type]}${factor.name ? ` "${factor.name}"` : ''}`;
  const subject = change === 'added' ? 'A new second factor was added to your account' : 'A second factor was removed from your account';
  const said =
    change === 'added'
      ? `A new second factor (${what}) was added to your account.`
      : `A second factor (${what}) was removed from your account.`;
  const advice = 'If this was not you, reset your password at once and review the second factors of your account.';
  return {
    to,
    subject,
    text: `${said}\n\n${advice}\n\n— ${projectId}\n`,
    html: `<p>${escapeHtml(said)}</p><p>${escapeHtml(advice)}</p><p>— ${escapeHtml(projectId)}</p>`,
  };
}

/** Queues the notice in the caller's transaction (the change's); the courier sends it after the commit. */
export async function queueFactorChangeMail(
  db: Queryable,
  secrets: SecretBox,
  env: { projectId: string; name: string },
  user: { id: string; email: string },
  change: FactorChange,
  factor: { type: FactorType; name: string | null },
  now: Date,
): Promise<void> {
  const mail = factorChangeMail(change, user.email, factor, env.projectId);
  await enqueueMail(
    db,
    secrets,
    { projectId: env.projectId, environment: env.name, userId: user.id, purpose: `mfa-factor-${change}`, mail },
    now,
  );
}
