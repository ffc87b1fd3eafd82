import { expect } from 'chai';
import type { TestApi } from '../../support/api.js';
import type { HttpClient } from '../../support/http.js';
import type { ReceivedMail } from '../../support/smtp.js';
import { bearer } from '../support.js';

// Helpers of the organization tests: what a user does, through HTTP, and what they read in e-mails.

/** The token of an invitation e-mail: the `invitation` parameter of its link. */
export function invitationTokenIn(mail: ReceivedMail): string {
  const link = /https?:\/\/\S+invitation=[^\s"<]+/.exec(mail.text)?.[0];
  expect(link, mail.text).to.be.a('string');
  return new URL(link!).searchParams.get('invitation')!;
}

export async function createOrganization(http: HttpClient, accessToken: string, name: string): Promise<string> {
  const r = await http.post('/auth/organizations', { name }, bearer(accessToken));
  expect(r.status, JSON.stringify(r.body)).to.equal(201);
  return r.body.organization.id;
}

/** Invites `email` and returns the token read from the e-mail that the SMTP server received. */
export async function invite(t: TestApi, http: HttpClient, accessToken: string, orgId: string, email: string, role = 'member') {
  const before = t.smtp.to(email).length;
  const r = await http.post(`/auth/organizations/${orgId}/invitations`, { email, role }, bearer(accessToken));
  expect(r.status, JSON.stringify(r.body)).to.equal(201);
  const mail = await t.smtp.waitFor(email, { after: before });
  return { invitation: r.body.invitation, mail, token: invitationTokenIn(mail) };
}

/** Audit rows of the environment of these types, oldest first. */
export async function auditRows(t: TestApi, projectId: string, types: string[]) {
  const { rows } = await t.ctx.pool.query(
    `SELECT type, user_id, details FROM walgate.auth_events WHERE project_id = $1 AND type = ANY ($2) ORDER BY seq`,
    [projectId, types],
  );
  return rows as Array<{ type: string; user_id: string | null; details: Record<string, unknown> }>;
}
