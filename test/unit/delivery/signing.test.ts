import { expect } from 'chai';
import { Webhook } from 'standardwebhooks';
import { hexSignature, signatureHeaders, standardSignature } from '../../../src/delivery/signing.js';

// The two signatures of every delivery, over the exact bytes sent: the interface's hex HMAC
// (X-Service-Signature / X-Webhook-Signature) and Standard Webhooks v1 (webhook-signature),
// checked against published test vectors and against the `standardwebhooks` reference library.

describe('unit: delivery signatures', () => {
  describe('X-Service-Signature: hex HMAC-SHA256 of the body', () => {
    it('matches the RFC 4231 HMAC-SHA256 test vectors', () => {
      // RFC 4231 test case 1 (key twenty 0x0b bytes, data "Hi There") and 2 (key "Jefe").
      expect(hexSignature('\x0b'.repeat(20), 'Hi There')).to.equal('b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7');
      expect(hexSignature('Jefe', 'what do ya want for nothing?')).to.equal(
        '5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843',
      );
    });

    it('signs the UTF-8 bytes of body and secret', () => {
      const a = hexSignature('sécret', '{"note":"é€😀"}');
      expect(a).to.match(/^[0-9a-f]{64}$/);
      expect(a).not.to.equal(hexSignature('secret', '{"note":"é€😀"}'));
      expect(a).not.to.equal(hexSignature('sécret', '{"note":"e€😀"}'));
    });

    it('is sent as sha256=<hex> and bare, with the event id and the Standard Webhooks headers', () => {
      const body = '{"id":"evt_1","event":"INSERT"}';
      const h = signatureHeaders(['s3cret'], 'evt_1', body, 1_700_000_000);
      const hex = hexSignature('s3cret', body);
      expect(h).to.deep.equal({
        'x-service-signature': `sha256=${hex}`,
        'x-webhook-signature': hex,
        'webhook-id': 'evt_1',
        'webhook-timestamp': '1700000000',
        'webhook-signature': standardSignature('s3cret', 'evt_1', 1_700_000_000, body),
      });
    });
  });

  describe('webhook-signature: Standard Webhooks v1', () => {
    // The reference test vector of the Standard Webhooks libraries ("sign function works").
    const VECTOR = {
      secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
      msgId: 'msg_p5jXN8AQM9LWM0D4loKWxJek',
      timestamp: 1614265330,
      payload: '{"test": 2432232314}',
      signature: 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=',
    };

    it('reproduces the reference test vector', () => {
      expect(standardSignature(VECTOR.secret, VECTOR.msgId, VECTOR.timestamp, VECTOR.payload)).to.equal(VECTOR.signature);
      // …as the reference library does for the same inputs.
      expect(new Webhook(VECTOR.secret).sign(VECTOR.msgId, new Date(VECTOR.timestamp * 1000), VECTOR.payload)).to.equal(VECTOR.signature);
    });

    it('differs when any signed part differs', () => {
      const { secret, msgId, timestamp, payload, signature } = VECTOR;
      expect(standardSignature(secret, `${msgId}x`, timestamp, payload)).not.to.equal(signature);
      expect(standardSignature(secret, msgId, timestamp + 1, payload)).not.to.equal(signature);
      expect(standardSignature(secret, msgId, timestamp, `${payload} `)).not.to.equal(signature);
      expect(standardSignature('whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSx', msgId, timestamp, payload)).not.to.equal(signature);
    });

    it('verifies with the standardwebhooks library (whsec_ secret), and a changed body does not', () => {
      const secret = 'whsec_' + Buffer.from('a 24-byte key for tests!').toString('base64');
      const body = '{"id":"evt_0000000001A2B3C4_000007","record":{"n":12345678901234567890.5}}';
      const now = Math.floor(Date.now() / 1000);
      const headers = signatureHeaders([secret], 'evt_0000000001A2B3C4_000007', body, now);
      const wh = new Webhook(secret);
      expect(() => wh.verify(body, headers)).not.to.throw();
      expect(() => wh.verify(body.replace('5}', '6}'), headers)).to.throw(/signature/i);
      expect(() => new Webhook('whsec_' + Buffer.from('another key for testing!').toString('base64')).verify(body, headers)).to.throw(
        /signature/i,
      );
    });

    it("keys a secret without whsec_ with its UTF-8 bytes (the library's raw format, given those bytes)", () => {
      const body = '{"a":1}';
      const now = Math.floor(Date.now() / 1000);
      const ascii = signatureHeaders(['plain-secret'], 'evt_x', body, now);
      expect(() => new Webhook('plain-secret', { format: 'raw' }).verify(body, ascii)).not.to.throw();
      // The library's raw string form takes one byte per UTF-16 unit; beyond ASCII, pass the bytes.
      const utf8 = signatureHeaders(['plain-sécret'], 'evt_x', body, now);
      expect(() => new Webhook(Buffer.from('plain-sécret', 'utf8'), { format: 'raw' }).verify(body, utf8)).not.to.throw();
      expect(() => new Webhook(Buffer.from('plain-secret', 'utf8'), { format: 'raw' }).verify(body, utf8)).to.throw(/signature/i);
    });
  });
});
