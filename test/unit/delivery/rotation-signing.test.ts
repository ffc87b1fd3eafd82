import { expect } from 'chai';
import { Webhook } from 'standardwebhooks';
import { hexSignature, signatureHeaders } from '../../../src/delivery/signing.js';

// Signing with the secrets of a rotation: pure, no database.

describe('unit: signing with the secrets of a rotation', () => {
  const body = '{"id":"evt_1","record":{"id":1}}';
  // Read when each test runs: verify() refuses a timestamp more than 5 minutes away from now.
  let now = 0;
  beforeEach(() => {
    now = Math.floor(Date.now() / 1000);
  });
  const fresh = 'whsec_' + Buffer.alloc(32, 1).toString('base64');
  const old = 'whsec_' + Buffer.alloc(32, 2).toString('base64');
  const verifies = (secret: string, headers: Record<string, string>) => {
    try {
      new Webhook(secret).verify(body, headers);
      return true;
    } catch {
      return false;
    }
  };

  it('one secret: one v1 signature, the seed headers with it', () => {
    const h = signatureHeaders([fresh], 'evt_1', body, now);
    expect(h['webhook-signature']!.split(' ')).to.have.length(1);
    expect(verifies(fresh, h)).to.equal(true);
    expect(verifies(old, h)).to.equal(false);
    expect(h['x-webhook-signature']).to.equal(hexSignature(fresh, body));
  });

  it('two secrets: `v1,<newest> v1,<previous>`, either verifies; the seed headers use the newest only', () => {
    const h = signatureHeaders([fresh, old], 'evt_1', body, now);
    const [first, second] = h['webhook-signature']!.split(' ');
    expect(first).to.equal(signatureHeaders([fresh], 'evt_1', body, now)['webhook-signature']);
    expect(second).to.equal(signatureHeaders([old], 'evt_1', body, now)['webhook-signature']);
    expect(verifies(fresh, h)).to.equal(true);
    expect(verifies(old, h)).to.equal(true);
    expect(h['x-service-signature']).to.equal(`sha256=${hexSignature(fresh, body)}`);
    expect(h['x-webhook-signature']).to.equal(hexSignature(fresh, body));
  });

  it('no secret is a programming error, not an unsigned delivery', () => {
    expect(() => signatureHeaders([], 'evt_1', body, now)).to.throw(/no secret/);
  });
});
