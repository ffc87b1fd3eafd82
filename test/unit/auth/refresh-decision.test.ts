import { expect } from 'chai';
import { decideRefresh, type PresentedToken } from '../../../src/auth/sessions/decision.js';

// The refresh rule at its edges: first use, reuse within and after the grace, and tokens of
// sessions that ended (revoked, idle, absolute) or expired, which are invalid without alarm.

const T0 = new Date('2026-01-01T00:00:00Z');
const at = (seconds: number) => new Date(T0.getTime() + seconds * 1000);
const GRACE = 10;

function token(over: Partial<PresentedToken> = {}, session: Partial<PresentedToken['session']> = {}): PresentedToken {
  return {
    usedAt: null,
    expiresAt: at(3600),
    ...over,
    session: { revokedAt: null, expiresAt: at(3600), absoluteExpiresAt: at(7200), ...session },
  };
}

describe('unit: the refresh decision', () => {
  it('an unknown token is invalid', () => {
    expect(decideRefresh(undefined, T0, GRACE)).to.deep.equal({ kind: 'invalid', reason: 'unknown' });
  });

  it('an unused token of a live session is exchanged', () => {
    expect(decideRefresh(token(), T0, GRACE)).to.deep.equal({ kind: 'exchange' });
  });

  it('a used token is exchanged again within the grace, up to and including its last second', () => {
    expect(decideRefresh(token({ usedAt: T0 }), at(0), GRACE).kind).to.equal('exchange');
    expect(decideRefresh(token({ usedAt: T0 }), at(GRACE), GRACE).kind).to.equal('exchange');
  });

  it('a used token after the grace is reuse: the family leaked', () => {
    expect(decideRefresh(token({ usedAt: T0 }), new Date(at(GRACE).getTime() + 1), GRACE)).to.deep.equal({ kind: 'reuse' });
  });

  it('a used token whose successor has been used is reuse even within the grace: the chain moved on, a second use forks it', () => {
    expect(decideRefresh(token({ usedAt: T0, successorUsedAt: at(1) }), at(2), GRACE)).to.deep.equal({ kind: 'reuse' });
    expect(decideRefresh(token({ usedAt: T0, successorUsedAt: null }), at(2), GRACE).kind).to.equal('exchange');
    // An ended session stays invalid, not reuse, whatever its tokens did.
    expect(decideRefresh(token({ usedAt: T0, successorUsedAt: at(1) }, { revokedAt: at(1) }), at(2), GRACE).kind).to.equal('invalid');
  });

  it('a zero grace makes any second use reuse', () => {
    expect(decideRefresh(token({ usedAt: T0 }), new Date(T0.getTime() + 1), 0).kind).to.equal('reuse');
  });

  it('a token of a revoked session is invalid, not reuse, used or not', () => {
    for (const usedAt of [null, T0]) {
      expect(decideRefresh(token({ usedAt }, { revokedAt: T0 }), at(60), GRACE)).to.deep.equal({
        kind: 'invalid',
        reason: 'session_ended',
      });
    }
  });

  it('a session past its idle or its absolute end is over, whatever its token says', () => {
    expect(decideRefresh(token({}, { expiresAt: at(5) }), at(5), GRACE)).to.deep.equal({ kind: 'invalid', reason: 'session_ended' });
    expect(decideRefresh(token({}, { absoluteExpiresAt: at(5) }), at(5), GRACE)).to.deep.equal({
      kind: 'invalid',
      reason: 'session_ended',
    });
  });

  it('an unused, expired token of a live session is invalid; a used one is still reuse', () => {
    expect(decideRefresh(token({ expiresAt: at(5) }), at(6), GRACE)).to.deep.equal({ kind: 'invalid', reason: 'expired' });
    expect(decideRefresh(token({ expiresAt: at(5), usedAt: T0 }), at(60), GRACE)).to.deep.equal({ kind: 'reuse' });
  });
});
