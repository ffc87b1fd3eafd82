import type { Logger } from '../core/log.js';

/**
 * What a start has taken so far (database, pool, listeners, daemons), let go in reverse order —
 * when the process is asked to stop, and as well when the start itself fails half-way, so that a
 * failed `npm start` leaves no embedded Postgres running without a parent.
 */
export class Teardown {
  readonly #log: Logger;
  readonly #steps: Array<{ name: string; release: () => Promise<void> }> = [];
  #running: Promise<void> | undefined;
  #interrupted = false;

  constructor(log: Logger) {
    this.#log = log;
  }

  /** Whether a stop has begun: a start still under way gives up at its next step. */
  get stopping(): boolean {
    return this.#interrupted || this.#running !== undefined;
  }

  /** A stop was asked for while the start still runs: from now on `add` ends the start. */
  interrupt(): void {
    this.#interrupted = true;
  }

  /**
   * Registers what was just acquired. When a stop began meanwhile (a signal during the start),
   * it is let go at once and the start is ended with `StartInterrupted`.
   */
  async add(name: string, release: () => Promise<void>): Promise<void> {
    if (this.stopping) {
      await this.#release({ name, release });
      throw new StartInterrupted();
    }
    this.#steps.push({ name, release });
  }

  /** Releases everything, newest first; a step that fails is logged and the next one still runs. Once. */
  run(): Promise<void> {
    this.#running ??= (async () => {
      for (let step = this.#steps.pop(); step; step = this.#steps.pop()) await this.#release(step);
    })();
    return this.#running;
  }

  async #release(step: { name: string; release: () => Promise<void> }): Promise<void> {
    try {
      await step.release();
    } catch (err) {
      this.#log.error({ err, step: step.name }, 'could not stop cleanly');
    }
  }
}

/** A stop signal arrived before the start finished; what it had taken is already released. */
export class StartInterrupted extends Error {
  override name = 'StartInterrupted';
  constructor() {
    super('stopped while starting');
  }
}
