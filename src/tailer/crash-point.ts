// Crash points for the reliability tests: a process started with WALGATE_CRASH_AT=<name> kills
// itself with SIGKILL when it reaches that point, so a test can show what a kill -9 at exactly
// that moment leaves behind (test/tailer/slot-gap-crash.test.ts). Unset in production: a no-op.

const at = process.env.WALGATE_CRASH_AT;

export async function crashPoint(name: string): Promise<void> {
  if (at !== name) return;
  process.kill(process.pid, 'SIGKILL');
  await new Promise(() => undefined); // the signal is on its way: nothing after this point runs
}
