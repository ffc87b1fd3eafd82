import { expect } from 'chai';
import { setTimeout as sleep } from 'node:timers/promises';
import { ClaimsGroups, type ClaimsCall } from '../../../src/auth/claims/groups.js';

// How calls of one environment's claims function are grouped into statements (claims/groups.ts):
// alone when nothing is in Postgres, together when they arrive meanwhile, each failure its own.

interface Recorder {
  groups: string[][];
  idle: number;
  inFlight: number;
  mostInFlight: number;
}

function grouped(o: { msPerCall?: number; failFor?: string; error?: () => Error } = {}): { groups: ClaimsGroups; seen: Recorder } {
  const seen: Recorder = { groups: [], idle: 0, inFlight: 0, mostInFlight: 0 };
  const run = async (calls: ClaimsCall[]) => {
    seen.groups.push(calls.map((c) => c.sub));
    seen.mostInFlight = Math.max(seen.mostInFlight, ++seen.inFlight);
    try {
      // (msPerCall 0: answered on the next turn of the loop, far below a millisecond a call.)
      await (o.msPerCall === 0 ? new Promise(setImmediate) : sleep((o.msPerCall ?? 1) * calls.length));
      if (calls.some((c) => c.sub === o.failFor)) throw o.error?.() ?? new Error(`failed for ${o.failFor}`);
      return calls.map((c) => `{"for":"${c.sub}"}`);
    } finally {
      seen.inFlight--;
    }
  };
  const groups = new ClaimsGroups(
    run,
    (err) => new Error(`verdict: ${(err as Error).message}`),
    () => seen.idle++,
  );
  return { groups, seen };
}

const call = (sub: string): ClaimsCall => ({ sub, claims: '{}' });

describe('claims function calls, grouped', () => {
  it('a call that finds nothing in flight goes alone, at once', async () => {
    const { groups, seen } = grouped();
    expect(await groups.call(call('a'))).to.equal('{"for":"a"}');
    expect(seen.groups).to.deep.equal([['a']]);
    await sleep(0); // the owner forgets the group once its statement has ended
    expect(seen.idle).to.equal(1);
  });

  it('calls arriving while one is in flight go together next, each answered with its own', async () => {
    const { groups, seen } = grouped();
    const subs = ['a', 'b', 'c', 'd', 'e', 'f'];
    const answers = await Promise.all(subs.map((s) => groups.call(call(s))));
    expect(answers).to.deep.equal(subs.map((s) => `{"for":"${s}"}`));
    expect(seen.groups).to.deep.equal([['a'], ['b', 'c', 'd', 'e', 'f']]);
    await sleep(0);
    expect(seen.idle).to.equal(1);
  });

  it('a failed group is tried call by call: the failure is the failing call’s alone', async () => {
    const { groups, seen } = grouped({ failFor: 'c' });
    const outcomes = await Promise.allSettled(['a', 'b', 'c', 'd'].map((s) => groups.call(call(s))));
    expect(outcomes.map((o) => o.status)).to.deep.equal(['fulfilled', 'fulfilled', 'rejected', 'fulfilled']);
    expect((outcomes[2] as PromiseRejectedResult).reason.message).to.equal('verdict: failed for c');
    expect((outcomes[3] as PromiseFulfilledResult<string>).value).to.equal('{"for":"d"}');
    expect(seen.groups).to.deep.equal([['a'], ['b', 'c', 'd'], ['b'], ['c'], ['d']]);
  });

  it('a slow function gets small groups, several at once, and never more than four statements', async () => {
    const { groups, seen } = grouped({ msPerCall: 10 });
    await groups.call(call('first')); // measured: 10 ms a call, so groups of 2 (25 ms of work)
    const subs = Array.from({ length: 20 }, (_, i) => `u${i}`);
    await Promise.all(subs.map((s) => groups.call(call(s))));
    const later = seen.groups.slice(1);
    expect(later.flat().sort()).to.deep.equal([...subs].sort());
    expect(Math.max(...later.map((g) => g.length))).to.be.at.most(2);
    expect(seen.mostInFlight).to.equal(4);
  });

  it('a fast function gets groups of at most 32, once its speed is measured', async () => {
    const { groups, seen } = grouped({ msPerCall: 0 });
    const subs = Array.from({ length: 100 }, (_, i) => `u${i}`);
    await Promise.all(subs.map((s) => groups.call(call(s))));
    expect(seen.groups.flat()).to.have.length(100);
    expect(seen.groups[0]).to.deep.equal(['u0']);
    expect(Math.max(...seen.groups.map((g) => g.length))).to.equal(32);
  });

  it('calls tried alone after their group failed go at most four at once', async () => {
    const { groups, seen } = grouped({ msPerCall: 0, failFor: 'u5' });
    const subs = Array.from({ length: 20 }, (_, i) => `u${i}`);
    const outcomes = await Promise.allSettled(subs.map((s) => groups.call(call(s))));
    expect(outcomes.filter((o) => o.status === 'rejected')).to.have.length(1);
    expect(seen.groups.filter((g) => g.length === 1 && g[0] !== 'u0').map((g) => g[0])).to.have.length(19);
    expect(seen.mostInFlight).to.be.at.most(4);
  });

  it('Postgres away: the whole group gets the connection error at once, nobody is tried alone', async () => {
    const refused = () => Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
    const { groups, seen } = grouped({ msPerCall: 0, failFor: 'b', error: refused });
    const outcomes = await Promise.allSettled(['a', 'b', 'c', 'd'].map((s) => groups.call(call(s))));
    expect(outcomes.map((o) => o.status)).to.deep.equal(['fulfilled', 'rejected', 'rejected', 'rejected']);
    expect(seen.groups).to.deep.equal([['a'], ['b', 'c', 'd']]);
  });
});
