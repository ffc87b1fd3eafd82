import { expect } from 'chai';
import { EndpointLimits, FAST_ANSWER_MS } from '../../../src/delivery/endpoint-limits.js';

// The per-subscription limit of requests in flight: additive increase while pressed and fast,
// multiplicative decrease on a failure or a slow answer, back to the base when unused.

/** `n` answers of the subscription: 2xx within `ms`. */
function answers(l: EndpointLimits, n: number, ms = 5, id = 'wh'): void {
  for (let i = 0; i < n; i++) l.answered(id, true, ms);
}

describe('endpoint limits', () => {
  it('grows by about one per round of fast answers while deliveries wait, up to the max', () => {
    const l = new EndpointLimits(16, 64);
    l.pressed('wh');
    answers(l, 16);
    expect(l.of('wh')).to.equal(17);
    answers(l, 5000);
    expect(l.of('wh')).to.equal(64);
  });

  it('does not grow without a backlog, nor on slow answers', () => {
    const l = new EndpointLimits(16, 64);
    answers(l, 100, 5, 'idle');
    expect(l.of('idle')).to.equal(16);
    l.pressed('slow');
    answers(l, 100, FAST_ANSWER_MS, 'slow');
    expect(l.of('slow')).to.equal(16);
  });

  it('halves at a failure or a slow answer, never below the base; and stops counting as pressed', () => {
    const l = new EndpointLimits(16, 64);
    l.pressed('wh');
    answers(l, 5000);
    l.answered('wh', false, 5);
    expect(l.of('wh')).to.equal(32);
    l.answered('wh', true, 5); // not pressed again yet: no growth
    expect(l.of('wh')).to.equal(32);
    l.answered('wh', true, 500);
    expect(l.of('wh')).to.equal(16);
    l.answered('wh', false, 5);
    expect(l.of('wh')).to.equal(16);
  });

  it('a raised limit no delivery waited at for 5 s goes back to the base', () => {
    let now = 0;
    const l = new EndpointLimits(16, 64, { now: () => now });
    l.pressed('wh');
    answers(l, 100);
    expect(l.of('wh')).to.be.above(16);
    now = 3000;
    l.pressed('wh'); // still waiting at it: kept
    now = 7000;
    l.sweep();
    expect(l.of('wh')).to.be.above(16);
    now = 8001;
    l.sweep();
    expect(l.of('wh')).to.equal(16);
  });

  it('grows only while deliveries waited at the limit since the last sweep', () => {
    const l = new EndpointLimits(16, 64);
    l.pressed('wh');
    answers(l, 32);
    expect(l.of('wh')).to.equal(17);
    l.sweep(); // the backlog is gone: fast answers no longer raise it
    answers(l, 100);
    expect(l.of('wh')).to.equal(17);
    l.pressed('wh');
    answers(l, 17);
    expect(l.of('wh')).to.equal(18);
  });

  it('a max at the base turns it off', () => {
    const l = new EndpointLimits(16, 16);
    l.pressed('wh');
    answers(l, 100);
    expect(l.of('wh')).to.equal(16);
  });
});
