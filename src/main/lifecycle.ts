import type { Logger } from '../core/log.js';

export interface SignalOptions {
  /** Bound of the drain; past it the process exits (after `force`). */
  timeoutMs?: number;
  /**
   * What must not outlive the process even when it does not drain (a second signal, the time-out):
   * `npm start` stops its embedded Postgres at once here (waiting for one being started). Bounded
   * by 20 s.
   */
  force?: () => Promise<void>;
}

/**
 * SIGINT/SIGTERM: the first drains (stop taking work, finish what is in flight, close), bounded
 * by a time-out; a second signal exits at once, after `force`.
 */
export function stopOnSignals(log: Logger, stop: () => Promise<void>, options: SignalOptions = {}): void {
  const { timeoutMs = 30000, force } = options;
  let stopping = false;
  const exitNow = (code: number) => {
    const forced = force ? Promise.race([force().catch(() => undefined), delay(20_000)]) : Promise.resolve();
    void forced.then(() => {
      log.flush?.();
      process.exit(code);
    });
  };
  const onSignal = (signal: NodeJS.Signals) => {
    if (stopping) {
      log.warn({ signal }, 'second signal: exiting now');
      return exitNow(130);
    }
    stopping = true;
    log.info({ signal }, 'shutting down');
    const timer = setTimeout(() => {
      log.error({ timeoutMs }, 'shutdown took too long: exiting');
      exitNow(1);
    }, timeoutMs);
    timer.unref();
    stop().then(
      () => {
        clearTimeout(timer);
        log.flush?.();
        process.exit(0);
      },
      (err: unknown) => {
        log.error({ err }, 'shutdown failed');
        exitNow(1);
      },
    );
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}

/** Prints a start-up failure plainly (a config error names its variable) and exits non-zero. */
export function exitOnStartupError(err: unknown): never {
  const message = err instanceof Error ? err.message : String(err);
  process.stderr.write(`walgate: ${message}\n`);
  process.exit(1);
}
