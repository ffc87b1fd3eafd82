// The calls of one environment's claims function, grouped the way a database groups commits: a call
// that finds none of the environment's calls in Postgres goes at once; the calls that arrive while
// one is there wait and go together in the next statement. Under load a token then costs a fraction
// of a round trip (a refresh's third statement was a fifth of its rate); alone, it waits for nothing.
//
// A group that fails is not a verdict on each call in it: every call is then tried alone, so an
// error, a time-out or a connection loss is the call's own. A group is sized so that the function's
// work in it (measured) stays far inside the one statement's budget (call.ts).

import { isConnectionError } from '../../core/db/pool.js';

/** What one call hands the function: the user's id and the token's claims as JSON. */
export interface ClaimsCall {
  sub: string;
  claims: string;
}

interface Waiting extends ClaimsCall {
  resolve(text: string | null): void;
  reject(err: unknown): void;
  /** Its group failed: it is tried in a statement of its own, so that the verdict is its own. */
  alone?: true;
}

/** Calls in one statement, at most. */
const MAX_GROUP = 32;
/** The function's measured work a group aims at: a tenth of the budget, so a time-out is the function's, not the group's. */
const GROUP_WORK_MS = 25;
/** Statements of one environment at once — calls tried alone included — never all of the claims connections. */
const MAX_IN_FLIGHT = 4;

export class ClaimsGroups {
  #waiting: Waiting[] = [];
  #inFlight = 0;
  /** Milliseconds per call in the last groups (a moving average); 0 until measured. */
  #perCallMs = 0;

  constructor(
    /** Runs calls in one statement: their answers in order, or the statement's error. */
    private readonly run: (calls: ClaimsCall[]) => Promise<Array<string | null>>,
    /** Makes a call's own failure (run alone) the error its caller gets. */
    private readonly failure: (err: unknown) => unknown,
    /** Called when nothing waits or runs any more (the owner forgets this group). */
    private readonly onIdle: () => void,
  ) {}

  call(call: ClaimsCall): Promise<string | null> {
    return new Promise((resolve, reject) => {
      this.#waiting.push({ ...call, resolve, reject });
      this.#pump();
    });
  }

  get #groupSize(): number {
    return this.#perCallMs === 0 ? MAX_GROUP : Math.max(1, Math.min(MAX_GROUP, Math.floor(GROUP_WORK_MS / this.#perCallMs)));
  }

  #pump(): void {
    while (this.#waiting.length > 0 && this.#inFlight < MAX_IN_FLIGHT) {
      // A call tried alone goes when there is room (they wait at the front). A group goes when
      // nothing of this environment is in Postgres, or — the function's speed measured — when a
      // whole group waits.
      const alone = this.#waiting[0]!.alone === true;
      const full = this.#perCallMs > 0 && this.#waiting.length >= this.#groupSize;
      if (!alone && this.#inFlight > 0 && !full) return;
      const group = this.#waiting.splice(0, alone ? 1 : this.#groupSize);
      this.#inFlight++;
      void this.#send(group).finally(() => {
        this.#inFlight--;
        this.#pump();
        if (this.#inFlight === 0 && this.#waiting.length === 0) this.onIdle();
      });
    }
  }

  async #send(group: Waiting[]): Promise<void> {
    const started = performance.now();
    try {
      const answers = await this.run(group);
      group.forEach((w, i) => w.resolve(answers[i] ?? null));
    } catch (err) {
      // Postgres away, or one call alone: that is the verdict. Otherwise whose call failed is not
      // known: each is tried alone, first in line.
      if (group.length === 1 || isConnectionError(err)) {
        for (const w of group) w.reject(this.failure(err));
      } else {
        this.#waiting.unshift(...group.map((w): Waiting => ({ ...w, alone: true })));
      }
    } finally {
      // (A group that ran out of time counts too: its calls took at least that long.)
      this.#measured((performance.now() - started) / group.length);
    }
  }

  #measured(ms: number): void {
    this.#perCallMs = this.#perCallMs === 0 ? ms : 0.7 * this.#perCallMs + 0.3 * ms;
  }
}
