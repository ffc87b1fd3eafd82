import { Secret, TOTP } from 'otpauth';
import QRCode from 'qrcode';

// TOTP as RFC 6238 and every authenticator app have it: SHA-1, 6 digits, 30-second steps, one
// step of drift either way. The secret is generated here and shown once (enrolment); what is
// stored is sealed (factors.ts), and a code is accepted only for a step later than the last
// accepted one, so a code works once and an older code never after it.

export const TOTP_PERIOD_SECONDS = 30;
const DIGITS = 6;
/** Steps of clock drift accepted either side of now. */
const WINDOW = 1;
/** 160 bits, the HMAC-SHA-1 block the RFC recommends. */
const SECRET_BYTES = 20;

export const TOTP_SECRET_PURPOSE = 'mfa-totp-secret';

export interface NewTotpSecret {
  /** Raw key bytes: sealed before they are stored. */
  key: Buffer;
  /** The key in base32, as authenticator apps take it by hand. */
  base32: string;
  otpauthUrl: string;
  qrSvg: string;
}

/** A fresh secret, its `otpauth://` URL (issuer: the project, label: the user's e-mail) and that URL as a QR code. */
export async function newTotpSecret(issuer: string, label: string): Promise<NewTotpSecret> {
  const secret = new Secret({ size: SECRET_BYTES });
  const totp = new TOTP({ issuer, label, secret, algorithm: 'SHA1', digits: DIGITS, period: TOTP_PERIOD_SECONDS });
  const otpauthUrl = totp.toString();
  const qrSvg = await QRCode.toString(otpauthUrl, { type: 'svg', errorCorrectionLevel: 'M', margin: 2 });
  return { key: Buffer.from(secret.bytes), base32: secret.base32, otpauthUrl, qrSvg };
}

/**
 * The time step that `code` belongs to (within one step of `now`), or undefined. The caller
 * accepts it only if it is later than the factor's last accepted step.
 */
export function totpStep(key: Buffer, code: string, now: Date): number | undefined {
  if (!/^[0-9]{6}$/.test(code)) return undefined;
  const totp = new TOTP({
    secret: new Secret({ buffer: new Uint8Array(key).buffer }),
    algorithm: 'SHA1',
    digits: DIGITS,
    period: TOTP_PERIOD_SECONDS,
  });
  // otpauth compares every candidate in constant time.
  const delta = totp.validate({ token: code, timestamp: now.getTime(), window: WINDOW });
  if (delta === null) return undefined;
  return Math.floor(now.getTime() / 1000 / TOTP_PERIOD_SECONDS) + delta;
}
