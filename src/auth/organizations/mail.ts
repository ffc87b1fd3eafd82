import type { Mail } from '../../core/mail/mailer.js';

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/**
 * The invitation e-mail: a link to the app's page (setting `organizations.invitationUrl`, default
 * PUBLIC_URL) with the token as `invitation=`; the page signs the user up or in, then accepts it.
 * The token is in the body too, for apps without such a page.
 */
export function invitationMail(input: {
  to: string;
  organization: string;
  role: string;
  link: string;
  token: string;
  validDays: number;
  projectId: string;
}): Mail {
  const intro = `You have been invited to join ${input.organization} as ${input.role}.`;
  const validity = `The invitation is valid for ${input.validDays} day${input.validDays === 1 ? '' : 's'} and can be used once, by ${input.to} only.`;
  const ignore = 'If you did not expect it, you can ignore this e-mail.';
  return {
    to: input.to,
    subject: `Invitation to join ${input.organization}`,
    text: `${intro}\n\nAccept it here (sign up or sign in with this address first):\n\n    ${input.link}\n\n${validity}\nInvitation token: ${input.token}\n${ignore}\n\n— ${input.projectId}\n`,
    html:
      `<p>${escapeHtml(intro)}</p><p><a href="${escapeHtml(input.link)}">Accept the invitation</a> (sign up or sign in with this address first).</p>` +
      `<p>${escapeHtml(validity)}<br>${escapeHtml(ignore)}</p><p>— ${escapeHtml(input.projectId)}</p>`,
  };
}

/** The link of an invitation: the page's URL with `invitation=<token>` set (other parameters kept). */
export function invitationLink(page: string, token: string): string {
  const url = new URL(page);
  url.searchParams.set('invitation', token);
  return url.toString();
}
