import { expect } from 'chai';
import { EndpointLimits, FAST_ANSWER_MS } from '../../../src/delivery/endpoint-limits.js';

// The per-subscription limit of requests in flight: additive increase while pressed and fast,
// multiplicative decrease on a failure or a slow answer, back to the base when unused.

describe('endpoint limits', () => {
  it('grows by about one per round of fast answers while deliveries wait, up to the max', () => {
    const l = new EndpointLimits(16, 64);
    l.pressed('wh');
    for (let i = 0; i < 16; i++) l.answered('wh', true, 5);
    expect(l.of('wh')).to.equal(17);
    for (let i = 0; i < 5000; i++) l.answered('wh', true, 5);
    expect(l.of('wh')).to.equal(64);
  });

  it('does not grow without a backlog, nor on slow answers', () => {
    const l = new EndpointLimits(16, 64);
    for (let i = 0; i < 100; i++) l.answered('idle', true, 5);
    expect(l.of('idle')).to.equal(16);
    l.pressed('slow');
    for (let i = 0; i < 100; i++) l.answered('slow', true, FAST_ANSWER_MS);
    expect(l.of('slow')).to.equal(16);
  });

  it('halves at a failure or a slow answer, never below the base; and stops counting as pressed', () => {
    const l = new EndpointLimits(16, 64);
    l.pressed('wh');
    for (let i = 0; i < 5000; i++) l.answered('wh', true, 5);
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
    for (let i = 0; i < 100; i++) l.answered('wh', true, 5);
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
    for (let i = 0; i < 32; i++) l.answered('wh', true, 5);
    expect(l.of('wh')).to.equal(17);
    l.sweep(); // the backlog is gone: fast answers no longer raise it
    for (let i = 0; i < 100; i++) l.answered('wh', true, 5);
    expect(l.of('wh')).to.equal(17);
    l.pressed('wh');
    for (let i = 0; i < 17; i++) l.answered('wh', true, 5);
    expect(l.of('wh')).to.equal(18);
  });

  it('a max at the base turns it off', () => {
    const l = new EndpointLimits(16, 16);
    l.pressed('wh');
    for (let i = 0; i < 100; i++) l.answered('wh', true, 5);
    expect(l.of('wh')).to.equal(16);
  });
});
