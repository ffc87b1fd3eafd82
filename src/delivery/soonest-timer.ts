/** Calls `fn` once at the soonest of the times asked for (a later ask while one is pending changes nothing). */
export class SoonestTimer {
  #timer: NodeJS.Timeout | undefined;
  #at = 0;

  constructor(private readonly fn: () => void) {}

  in(ms: number): void {
    if (!Number.isFinite(ms)) return;
    const at = performance.now() + ms;
    if (this.#timer && this.#at <= at) return;
    clearTimeout(this.#timer);
    this.#at = at;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.fn();
    }, ms);
    this.#timer.unref();
  }

  stop(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }
}
