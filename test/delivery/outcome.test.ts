import { expect } from 'chai';
import { classifyAnswer, RETRY_AFTER_CAP_MS, retryAfterMs } from '../../src/delivery/outcome.js';

// The receiver's answer → what happens to the delivery (Standard Webhooks). Pure: no I/O.
describe('delivery: what a receiver’s answer means (outcome.ts)', () => {
  const now = new Date('2026-11-24T05:00:00Z');
  const delays = [0, 1000, 5000]; // three attempts
  const noJitter = () => 0.5;
  const retryIn = (answer: Parameters<typeof classifyAnswer>[0], attempt = 1) => {
    const o = classifyAnswer(answer, attempt, now, delays, noJitter);
    if (o.kind !== 'retry') throw new Error(`expected a retry, got ${o.kind}`);
    return o.notBefore.getTime() - now.getTime();
  };

  it('2xx is delivered, whatever the attempt', () => {
    for (const status of [200, 201, 204, 299]) expect(classifyAnswer({ status }, 3, now, delays)).to.deep.equal({ kind: 'delivered' });
  });

  it('410 Gone disables the subscription after this one attempt, even with attempts left', () => {
    expect(classifyAnswer({ status: 410 }, 1, now, delays)).to.deep.equal({ kind: 'disable', reason: 'the receiver answered 410 Gone' });
    expect(classifyAnswer({ status: 410 }, 3, now, delays).kind).to.equal('disable');
  });

  it('other failures follow the schedule, then the last attempt is dead', () => {
    expect(retryIn({ status: 500 })).to.equal(1000);
    expect(retryIn({ status: null }, 2)).to.equal(5000);
    expect(retryIn({ status: 404 })).to.equal(1000);
    expect(retryIn({ status: 302 })).to.equal(1000);
    expect(classifyAnswer({ status: 500 }, 3, now, delays)).to.deep.equal({ kind: 'dead' });
    expect(classifyAnswer({ status: null }, 3, now, delays)).to.deep.equal({ kind: 'dead' });
  });

  it('429 and 503 with Retry-After in seconds wait at least that (more than the schedule)', () => {
    expect(retryIn({ status: 429, headers: { 'retry-after': '120' } })).to.equal(120_000);
    expect(retryIn({ status: 503, headers: { 'retry-after': ' 30 ' } })).to.equal(30_000);
    // Shorter than the schedule: the schedule wins (at least that long, not exactly that long).
    expect(retryIn({ status: 503, headers: { 'retry-after': '0' } })).to.equal(1000);
  });

  it('Retry-After as an HTTP date', () => {
    expect(retryIn({ status: 503, headers: { 'retry-after': 'Tue, 24 Nov 2026 05:10:00 GMT' } })).to.equal(600_000);
    expect(retryIn({ status: 429, headers: { 'retry-after': 'Tue, 24 Nov 2026 04:00:00 GMT' } })).to.equal(1000); // already past
  });

  it('caps Retry-After at an hour, however it is given', () => {
    expect(retryIn({ status: 429, headers: { 'retry-after': '999999999999999999999' } })).to.equal(RETRY_AFTER_CAP_MS);
    expect(retryIn({ status: 503, headers: { 'retry-after': 'Fri, 24 Nov 2028 05:00:00 GMT' } })).to.equal(RETRY_AFTER_CAP_MS);
  });

  it('ignores Retry-After on other statuses, and values that are neither seconds nor a date', () => {
    expect(retryIn({ status: 500, headers: { 'retry-after': '120' } })).to.equal(1000);
    for (const v of ['-5', '1.5', 'soon', 'Nov 2026', '', '12abc'])
      expect(retryIn({ status: 503, headers: { 'retry-after': v } }), v).to.equal(1000);
    expect(retryIn({ status: 503, headers: { 'retry-after': ['60', '1'] } })).to.equal(60_000);
  });

  it('a Retry-After does not buy attempts: the last one is still dead', () => {
    expect(classifyAnswer({ status: 429, headers: { 'retry-after': '10' } }, 3, now, delays)).to.deep.equal({ kind: 'dead' });
  });

  it('retryAfterMs parses both forms and nothing else', () => {
    expect(retryAfterMs(undefined, now)).to.equal(null);
    expect(retryAfterMs('7', now)).to.equal(7000);
    expect(retryAfterMs('Tue, 24 Nov 2026 05:00:05 GMT', now)).to.equal(5000);
    expect(retryAfterMs('tomorrow', now)).to.equal(null);
  });
});
