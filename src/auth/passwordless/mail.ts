import type { Mail } from '../../core/mail/mailer.js';

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** The link's URL: the allowed redirect with the single-use token as `token=` (docs/passwordless.md). */
export function magicLinkUrl(redirectTo: string, token: string): string {
  const url = new URL(redirectTo);
  url.searchParams.set('token', token);
  return url.href;
}

/** The magic-link e-mail: the link only in the body (a subject line shows in notifications and logs). */
export function magicLinkMail(to: string, link: string, validMinutes: number, projectId: string): Mail {
  const ignore = 'If you did not try to sign in, you can ignore this e-mail; nobody can sign in without the link.';
  return {
    to,
    subject: 'Your sign-in link',
    text: `Open this link to sign in:\n\n    ${link}\n\nIt is valid for ${validMinutes} minutes and can be used once.\n${ignore}\n\n— ${projectId}\n`,
    html:
      `<p>Open this link to sign in:</p><p><a href="${escapeHtml(link)}">Sign in</a></p>` +
      `<p>It is valid for ${validMinutes} minutes and can be used once.<br>${escapeHtml(ignore)}</p><p>— ${escapeHtml(projectId)}</p>`,
  };
}
