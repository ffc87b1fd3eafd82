import { expect } from 'chai';
import { totpStep } from '../../../src/auth/mfa/totp.js';

// walgate's TOTP check against the test vectors of RFC 6238 Appendix B (SHA-1 key
// "12345678901234567890"), truncated to the 6 digits that authenticator apps show.

const KEY = Buffer.from('12345678901234567890', 'ascii');
const VECTORS: Array<[seconds: number, eightDigits: string]> = [
  [59, '94287082'],
  [1111111109, '07081804'],
  [1111111111, '14050471'],
  [1234567890, '89005924'],
  [2000000000, '69279037'],
  [20000000000, '65353130'],
];

describe('unit: TOTP (RFC 6238 vectors)', () => {
  for (const [seconds, code] of VECTORS) {
    it(`T = ${seconds}: ${code.slice(2)} is the code of step ${Math.floor(seconds / 30)}`, () => {
      const now = new Date(seconds * 1000);
      expect(totpStep(KEY, code.slice(2), now)).to.equal(Math.floor(seconds / 30));
      // One step either way is accepted as that step; two steps away is not.
      expect(totpStep(KEY, code.slice(2), new Date((seconds + 30) * 1000))).to.equal(Math.floor(seconds / 30));
      expect(totpStep(KEY, code.slice(2), new Date((seconds + 60) * 1000))).to.equal(undefined);
    });
  }

  it('refuses anything but 6 digits', () => {
    for (const code of ['', '12345', '1234567', '12345a', ' 94287', '０９４２８７'])
      expect(totpStep(KEY, code, new Date(59_000))).to.equal(undefined);
  });
});
