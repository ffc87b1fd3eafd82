import type { Mail } from '../core/mail/mailer.js';
import type { CodePurpose } from './codes.js';

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

const TEXT: Record<CodePurpose, { subject: string; intro: string }> = {
  signup: { subject: 'Your confirmation code', intro: 'Use this code to confirm your e-mail address:' },
  recovery: { subject: 'Your password reset code', intro: 'Use this code to choose a new password:' },
};

/** The e-mail carrying a code: in the subject line too, so it shows in a notification. */
export function codeMail(purpose: CodePurpose, to: string, code: string, validMinutes: number, projectId: string): Mail {
  const t = TEXT[purpose];
  const ignore =
    purpose === 'signup'
      ? 'If you did not sign up, you can ignore this e-mail.'
      : 'If you did not ask to reset your password, you can ignore this e-mail; your password is unchanged.';
  return {
    to,
    subject: `${t.subject}: ${code}`,
    text: `${t.intro}\n\n    ${code}\n\nIt is valid for ${validMinutes} minutes and can be used once.\n${ignore}\n\n— ${projectId}\n`,
    html:
      `<p>${escapeHtml(t.intro)}</p><p style="font-size:24px;font-weight:bold;letter-spacing:4px">${code}</p>` +
      `<p>It is valid for ${validMinutes} minutes and can be used once.<br>${escapeHtml(ignore)}</p><p>— ${escapeHtml(projectId)}</p>`,
  };
}
