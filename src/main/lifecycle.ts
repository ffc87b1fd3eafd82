import type { Logger } from '../core/log.js';

/**
 * SIGINT/SIGTERM: the first drains (stop taking work, finish what is in flight, close), bounded
 * by a time-out; a second signal exits at once.
 */
export function stopOnSignals(log: Logger, stop: () => Promise<void>, timeoutMs = 30000): void {
  let stopping = false;
  const onSignal = (signal: NodeJS.Signals) => {
    if (stopping) {
      log.warn({ signal }, 'second signal: exiting now');
      process.exit(130);
    }
    stopping = true;
    log.info({ signal }, 'shutting down');
    const timer = setTimeout(() => {
      log.error({ timeoutMs }, 'shutdown took too long: exiting');
      process.exit(1);
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
        process.exit(1);
      },
    );
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
}

/** Prints a start-up failure plainly (a config error names its variable) and exits non-zero. */
export function exitOnStartupError(err: unknown): never {
  const message = err instanceof Error ? err.message : String(err);
  process.stderr.write(`walgate: ${message}\n`);
  process.exit(1);
}
