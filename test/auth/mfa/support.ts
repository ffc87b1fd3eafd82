import { createHmac } from 'node:crypto';
import { expect } from 'chai';
import type { TestApi } from '../../support/api.js';
import type { HttpClient } from '../../support/http.js';
import { bearer, type Account } from '../support.js';

// The test's own RFC 6238 (HMAC-SHA1, 6 digits, 30 s), written from the RFC and nothing of
// walgate's or otpauth's: if walgate computed codes differently from every authenticator app,
// these tests would see it.

const BASE32 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';

export function base32Decode(text: string): Buffer {
  let bits = 0;
  let value = 0;
  const out: number[] = [];
  for (const ch of text.replace(/=+$/, '').toUpperCase()) {
    const i = BASE32.indexOf(ch);
    if (i < 0) throw new Error(`not base32: ${ch}`);
    value = (value << 5) | i;
    bits += 5;
    if (bits >= 8) {
      out.push((value >>> (bits - 8)) & 0xff);
      bits -= 8;
    }
  }
  return Buffer.from(out);
}

/** RFC 4226 HOTP truncated to `digits` digits. */
export function hotp(key: Buffer, counter: number, digits = 6): string {
  const msg = Buffer.alloc(8);
  msg.writeBigUInt64BE(BigInt(counter));
  const mac = createHmac('sha1', key).update(msg).digest();
  const offset = mac[mac.length - 1]! & 0x0f;
  const binary = (mac.readUInt32BE(offset) & 0x7fffffff) % 10 ** digits;
  return binary.toString().padStart(digits, '0');
}

/** The TOTP code of a base32 secret at `time`, `stepsAgo` steps earlier. */
export function totp(secretBase32: string, time: Date, stepsAgo = 0): string {
  return hotp(base32Decode(secretBase32), Math.floor(time.getTime() / 1000 / 30) - stepsAgo);
}

export const gql = (http: HttpClient, query: string, variables: Record<string, unknown> = {}, token?: string) =>
  http.post('/graphql', { query, variables }, token ? bearer(token) : {});

/** The payload of a JWS access token (no check: the api checked it). */
export function claimsOf(accessToken: string): Record<string, any> {
  return JSON.parse(Buffer.from(accessToken.split('.')[1]!, 'base64url').toString('utf8'));
}

export const FACTOR_ADDED_SUBJECT = 'A new second factor was added to your account';
export const FACTOR_REMOVED_SUBJECT = 'A second factor was removed from your account';

/** Enrols and activates an authenticator app for the account: its secret, factor id and recovery codes. */
export async function enrolTotp(t: TestApi, http: HttpClient, a: Pick<Account, 'accessToken'> & { email?: string }) {
  const enrol = await http.post('/auth/mfa/totp/enroll', { name: 'phone' }, bearer(a.accessToken));
  expect(enrol.status, JSON.stringify(enrol.body)).to.equal(200);
  const email = a.email ?? (claimsOf(a.accessToken).email as string);
  const mailed = t.smtp.to(email).length;
  const verify = await http.post(
    '/auth/mfa/totp/verify',
    { factorId: enrol.body.factorId, code: totp(enrol.body.secret, t.clock.now()) },
    bearer(a.accessToken),
  );
  expect(verify.status, JSON.stringify(verify.body)).to.equal(200);
  // The notice of the new factor is on its way: wait for it, so that a test's next e-mail is its own.
  expect((await t.smtp.waitFor(email, { after: mailed })).subject).to.equal(FACTOR_ADDED_SUBJECT);
  return {
    secret: enrol.body.secret as string,
    factorId: enrol.body.factorId as string,
    recoveryCodes: verify.body.recoveryCodes as string[],
  };
}
