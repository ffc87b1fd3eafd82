import { randomBytes } from 'node:crypto';
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
  confirmSignupPerIp: { name: 'confirm-signup-ip', points: 10_000, durationSeconds: 60 },
  confirmSignupPerEmail: { name: 'confirm-signup-email', points: 10_000, durationSeconds: 60 },
  resetPasswordPerIp: { name: 'reset-password-ip', points: 10_000, durationSeconds: 60 },
  resetPasswordPerEmail: { name: 'reset-password-email', points: 10_000, durationSeconds: 60 },
  // Per client address only: the per-user limit of second-factor guesses stays as it is.
  mfaChallengePerIp: { name: 'mfa-challenge-ip', points: 10_000, durationSeconds: 60 },
  passkeyLoginPerIp: { name: 'passkey-login-ip', points: 10_000, durationSeconds: 60 },
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
  deviceToken: string;
}

/** Signs up, reads the code from the real SMTP server, confirms: a verified, logged-in account. */
export async function signUpAndConfirm(t: TestApi, http: HttpClient, email = uniqueEmail(), password = PASSWORD): Promise<Account> {
  const before = t.smtp.to(email).length;
  const signup = await http.post('/auth/signup', { email, password });
  expect(signup.status, JSON.stringify(signup.body)).to.equal(201);
  const mail = await t.smtp.waitFor(email, { after: before });
  const confirm = await http.post('/auth/confirm-signup', { email, code: codeIn(mail) });
  expect(confirm.status, JSON.stringify(confirm.body)).to.equal(200);
  return {
    email,
    password,
    userId: signup.body.userId,
    accessToken: confirm.body.accessToken,
    refreshToken: confirm.body.refreshToken,
    deviceToken: confirm.body.deviceToken,
  };
}

export const bearer = (token: string) => ({ headers: { authorization: `Bearer ${token}` } });

/**
 * CPU time (user + system, every thread of this process: the event loop and the hashing threads)
 * spent while `fn` runs. The api runs in the test's process, so this is the request's cost.
 */
export async function cpuMsOf<T>(fn: () => Promise<T>): Promise<{ result: T; cpuMs: number }> {
  const start = process.cpuUsage();
  const result = await fn();
  const used = process.cpuUsage(start);
  return { result, cpuMs: (used.user + used.system) / 1000 };
}

/** A password of `length` characters drawn from letters, digits and the symbols the l33t matcher reads. */
export function randomPassword(length: number): string {
  const alphabet = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789!@#$%^&*()-_=+[]{};:,.<>/?|';
  return Array.from(randomBytes(length), (b) => alphabet[b % alphabet.length]).join('');
}

/** Counts of walgate_auth_events_total by event. */
export async function authEvents(t: TestApi): Promise<Record<string, number>> {
  const metric = await t.ctx.metrics.authEvents.get();
  return Object.fromEntries(metric.values.map((v) => [String(v.labels.event), v.value]));
}
