import type { Mail } from '../../core/mail/mailer.js';

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** The invitation: a code to choose a password with (reset-password), in the subject line too. */
export function inviteMail(to: string, code: string, validMinutes: number, projectId: string): Mail {
  const intro = `You have been invited to ${projectId}. Use this code to choose your password:`;
  return {
    to,
    subject: `Your invitation code: ${code}`,
    text: `${intro}\n\n    ${code}\n\nIt is valid for ${validMinutes} minutes and can be used once.\n\n— ${projectId}\n`,
    html:
      `<p>${escapeHtml(intro)}</p><p style="font-size:24px;font-weight:bold;letter-spacing:4px">${code}</p>` +
      `<p>It is valid for ${validMinutes} minutes and can be used once.</p><p>— ${escapeHtml(projectId)}</p>`,
  };
}
