import { expect } from 'chai';
import { createLogger } from '../../../src/core/log.js';
import { stateAfterAttempt, subscriptionState, SubscriptionStateLog } from '../../../src/delivery/subscription-state.js';
import { TestClock } from '../../support/clock.js';
import { CapturedLogs } from '../../support/logs.js';

// A subscription's state in one word, and its log: the first failure and each change at warn,
// with the reason, at most one line per subscription per minute.

describe('subscription state', () => {
  it('is read from `active` and the endpoint breaker', () => {
    expect(subscriptionState(true, { state: 'closed', consecutiveFailures: 0 })).to.equal('healthy');
    expect(subscriptionState(true, { state: 'closed', consecutiveFailures: 1 })).to.equal('failing');
    expect(subscriptionState(true, { state: 'open', consecutiveFailures: 5 })).to.equal('breaker_open');
    expect(subscriptionState(true, { state: 'half-open', consecutiveFailures: 5 })).to.equal('breaker_open');
    expect(subscriptionState(false, { state: 'open', consecutiveFailures: 5 })).to.equal('disabled');
    expect(stateAfterAttempt({ ok: false, disabled: false, breaker: 'open' })).to.equal('breaker_open');
    expect(stateAfterAttempt({ ok: false, disabled: true, breaker: 'closed' })).to.equal('disabled');
  });

  it('logs the first failure and each change at warn, with the reason, once a minute at most', () => {
    const logs = new CapturedLogs();
    const clock = new TestClock();
    const states = new SubscriptionStateLog(createLogger('info', logs), clock.now);
    const lines = () => logs.lines.map((l) => JSON.parse(l) as Record<string, unknown>);
    states.observe('wh_a', 'healthy', 'delivered');
    expect(lines()).to.deep.equal([]);
    states.observe('wh_a', 'failing', 'HTTP 500');
    states.observe('wh_a', 'failing', 'HTTP 502'); // no change: no line
    states.observe('wh_b', 'failing', 'ECONNREFUSED: connect ECONNREFUSED [address]'); // another subscription: its own line
    expect(lines().map((l) => [l.level, l.webhook, l.state, l.previous, l.reason])).to.deep.equal([
      [40, 'wh_a', 'failing', 'healthy', 'HTTP 500'],
      [40, 'wh_b', 'failing', 'healthy', 'ECONNREFUSED: connect ECONNREFUSED [address]'],
    ]);
    // Within the minute: changes are folded in, not logged.
    clock.advance(10_000);
    states.observe('wh_a', 'breaker_open', 'breaker open');
    states.observe('wh_a', 'healthy', 'delivered');
    expect(lines()).to.have.length(2);
    clock.advance(60_000);
    states.observe('wh_a', 'healthy', 'delivered');
    expect(lines()[2]).to.include({ webhook: 'wh_a', state: 'healthy', previous: 'failing', changesNotLogged: 1 });
    // Healthy again and logged: forgotten, so its next failure is a first failure again.
    states.observe('wh_a', 'failing', 'HTTP 500');
    expect(lines()[3]).to.include({ webhook: 'wh_a', state: 'failing', previous: 'healthy' });
  });
});
