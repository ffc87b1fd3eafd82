import type { SecretBox } from '../core/crypto/secretbox.js';
import type { Queryable } from '../core/db/pool.js';
import type { Mail } from '../core/mail/mailer.js';
import { enqueueMail } from '../core/mail/outbox.js';
import type { Environment } from '../projects/environments.js';
import { issueCode, type CodePurpose } from './codes.js';

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

const TEXT: Record<CodePurpose, { subject: string; intro: string }> = {
  signup: { subject: 'Your confirmation code', intro: 'Use this code to confirm your e-mail address:' },
  recovery: { subject: 'Your password reset code', intro: 'Use this code to choose a new password:' },
  otp: { subject: 'Your sign-in code', intro: 'Use this code to sign in:' },
};

const IGNORE: Record<CodePurpose, string> = {
  signup: 'If you did not sign up, you can ignore this e-mail.',
  recovery: 'If you did not ask to reset your password, you can ignore this e-mail; your password is unchanged.',
  otp: 'If you did not try to sign in, you can ignore this e-mail; nobody can sign in without the code.',
};

/** The e-mail carrying a code: in the subject line too, so it shows in a notification. */
export function codeMail(purpose: CodePurpose, to: string, code: string, validMinutes: number, projectId: string): Mail {
  const t = TEXT[purpose];
  const ignore = IGNORE[purpose];
  return {
    to,
    subject: `${t.subject}: ${code}`,
    text: `${t.intro}\n\n    ${code}\n\nIt is valid for ${validMinutes} minutes and can be used once.\n${ignore}\n\n— ${projectId}\n`,
    html:
      `<p>${escapeHtml(t.intro)}</p><p style="font-size:24px;font-weight:bold;letter-spacing:4px">${code}</p>` +
      `<p>It is valid for ${validMinutes} minutes and can be used once.<br>${escapeHtml(ignore)}</p><p>— ${escapeHtml(projectId)}</p>`,
  };
}

/**
 * A fresh code and its e-mail, in the caller's transaction: both commit with the change that asked
 * for them, or neither does; the courier sends the e-mail after the commit.
 */
export async function queueCodeMail(
  db: Queryable,
  secrets: SecretBox,
  env: Environment,
  user: { id: string; email: string },
  purpose: CodePurpose,
  now: Date,
): Promise<void> {
  const code = await issueCode(db, secrets, user.id, purpose, new Date(now.getTime() + env.codeTtlSeconds * 1000), now);
  const mail = codeMail(purpose, user.email, code, Math.round(env.codeTtlSeconds / 60), env.projectId);
  await enqueueMail(db, secrets, { projectId: env.projectId, environment: env.name, userId: user.id, purpose, mail }, now);
}
