import { expect } from 'chai';
import type { TestApi, TestApiOptions } from '../support/api.js';
import { startTestApi } from '../support/api.js';
import type { HttpClient } from '../support/http.js';
import { codeIn } from '../support/smtp.js';

export const PASSWORD = 'correct horse battery staple 42';

/** Limits far above what a test file does, except where a test checks the limits themselves. */
export const GENEROUS_LIMITS = {
  signup: { name: 'signup', points: 10_000, durationSeconds: 60 },
  login: { name: 'login', points: 10_000, durationSeconds: 60 },
  recoverPassword: { name: 'recover-password', points: 10_000, durationSeconds: 60 },
};

export function startAuthApi(options: TestApiOptions = {}): Promise<TestApi> {
  return startTestApi({ ...options, overrides: { rateLimits: GENEROUS_LIMITS, ...options.overrides } });
}

let counter = 0;
export function uniqueEmail(prefix = 'user'): string {
  return `${prefix}.${Date.now().toString(36)}${(counter++).toString(36)}@example.com`;
}

export interface Account {
  email: string;
  password: string;
  userId: string;
  accessToken: string;
  refreshToken: string;
}

/** Signs up, reads the code from the real SMTP server, confirms: a verified, logged-in account. */
export async function signUpAndConfirm(t: TestApi, http: HttpClient, email = uniqueEmail(), password = PASSWORD): Promise<Account> {
  const before = t.smtp.to(email).length;
  const signup = await http.post('/auth/signup', { email, password });
  expect(signup.status, JSON.stringify(signup.body)).to.equal(201);
  const mail = await t.smtp.waitFor(email, { after: before });
  const confirm = await http.post('/auth/confirm-signup', { email, code: codeIn(mail) });
  expect(confirm.status, JSON.stringify(confirm.body)).to.equal(200);
  return { email, password, userId: signup.body.userId, accessToken: confirm.body.accessToken, refreshToken: confirm.body.refreshToken };
}

export const bearer = (token: string) => ({ headers: { authorization: `Bearer ${token}` } });
