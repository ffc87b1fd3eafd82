import type { Clock } from '../../src/core/clock.js';

/** A clock that tests move by hand. */
export class TestClock {
  #now: number;

  constructor(start = Date.now()) {
    this.#now = start;
  }

  readonly now: Clock = () => new Date(this.#now);

  advance(ms: number): void {
    this.#now += ms;
  }

  advanceSeconds(s: number): void {
    this.advance(s * 1000);
  }
}
