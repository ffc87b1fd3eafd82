import { spawn, type ChildProcess } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';

// Daemons run as child processes, as in production, so that their CPU, peak RSS and event-loop
// delay can be read per run.
//
// Every child the bench starts is tracked here, and SIGINT / SIGTERM stop them all (TERM, then
// KILL after a deadline) and then run the shutdown steps (Postgres last) before the bench exits:
// a stopped bench leaves nothing running.

const children = new Set<ChildProcess>();
const shutdownSteps: Array<() => Promise<void>> = [];
const CHILD_STOP_MS = 5000;
const STEP_MS = 30_000;

/** Tracks a child process: stopped with the bench. */
export function track<C extends ChildProcess>(child: C): C {
  children.add(child);
  child.once('exit', () => children.delete(child));
  return child;
}

/** A step run when the bench is stopped by a signal, after the children are gone (in reverse order of registration). */
export function onShutdown(step: () => Promise<void>): void {
  shutdownSteps.push(step);
}

/** Stops every tracked child: SIGTERM, then SIGKILL for any still there after the deadline. */
export async function stopChildren(deadlineMs = CHILD_STOP_MS): Promise<void> {
  const running = [...children].filter((c) => c.exitCode === null && c.signalCode === null);
  const exited = running.map((c) => new Promise<void>((resolve) => (c.exitCode !== null || c.signalCode !== null ? resolve() : c.once('exit', () => resolve()))));
  for (const c of running) c.kill('SIGTERM');
  const all = Promise.all(exited);
  if (await withDeadline(all, deadlineMs).then(() => true, () => false)) return;
  for (const c of running) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  await withDeadline(all, deadlineMs).catch(() => undefined);
}

/** Resolves or rejects with `promise`, or rejects with a message naming `what` after `ms`. */
export async function withDeadline<T>(promise: Promise<T>, ms: number, what = 'operation'): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no result within ${Math.round(ms / 1000)} s`)), ms);
  });
  try {
    return await Promise.race([promise, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** Polls `check` until it is done; past the deadline, fails with what it last saw. */
export async function until(check: () => Promise<{ done: boolean; state: string }>, deadlineMs: number, what: string): Promise<void> {
  const deadline = Date.now() + deadlineMs;
  for (;;) {
    const { done, state } = await check();
    if (done) return;
    if (Date.now() > deadline) throw new Error(`${what}: not done within ${Math.round(deadlineMs / 1000)} s (${state})`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

let shuttingDown: Promise<void> | undefined;

/**
 * Runs the shutdown steps once, each bounded, the last registered first. The signal handler and
 * the bench's own end both call it: whichever comes second waits for the same run (two would
 * stop Postgres while the other removes its directory).
 */
export function runShutdown(log: (msg: string) => void): Promise<void> {
  return (shuttingDown ??= (async () => {
    for (const step of [...shutdownSteps].reverse()) {
      await withDeadline(step(), STEP_MS, 'shutdown step').catch((err: unknown) => log(`shutdown: ${(err as Error).message}`));
    }
  })());
}

/** On SIGINT / SIGTERM: stop the children, run the shutdown steps, exit 130 / 143. */
export function stopOnSignals(log: (msg: string) => void, childStopMs = CHILD_STOP_MS): void {
  let stopping = false;
  const stop = async (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    log(`${signal}: stopping child processes and Postgres`);
    await stopChildren(childStopMs);
    await runShutdown(log);
    process.exit(signal === 'SIGINT' ? 130 : 143);
  };
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGTERM', () => void stop('SIGTERM'));
}

// The entries production runs (the api's is CommonJS: it sizes libuv's pool first).
export type DaemonName = 'api' | 'tailer' | 'worker';
const MAIN = (name: DaemonName) => fileURLToPath(new URL(`../../src/main/${name === 'api' ? 'api.cjs' : `${name}.js`}`, import.meta.url));

export class Daemon {
  #cpuAt = 0;
  #cpuTicks = 0;
  constructor(
    readonly name: string,
    readonly child: ChildProcess,
    readonly metricsUrl: string,
  ) {}

  static async start(name: DaemonName, env: NodeJS.ProcessEnv, metricsUrl: string): Promise<Daemon> {
    // BENCH_PROFILE=tailer (or api) writes a CPU profile of that daemon under bench/profiles/.
    const profile = process.env.BENCH_PROFILE === name ? ['--cpu-prof', `--cpu-prof-dir=${fileURLToPath(new URL('../../../bench/profiles/', import.meta.url))}`] : [];
    const child = track(spawn(process.execPath, [...profile, MAIN(name)], { env, stdio: ['ignore', 'ignore', 'pipe'] }));
    child.stderr!.on('data', (d: Buffer) => process.stderr.write(`[${name}] ${d}`));
    const daemon = new Daemon(name, child, metricsUrl);
    const until = Date.now() + 30_000;
    for (;;) {
      const ok = await fetch(metricsUrl.replace('/metrics', '/healthz')).then((r) => r.ok, () => false);
      if (ok) break;
      if (child.exitCode !== null || Date.now() > until) {
        child.kill('SIGKILL');
        throw new Error(`${name} did not answer /healthz within 30 s${child.exitCode !== null ? ` (exited with ${child.exitCode})` : ''}`);
      }
      await new Promise((r) => setTimeout(r, 100));
    }
    return daemon;
  }

  async #ticks(): Promise<number> {
    const stat = await readFile(`/proc/${this.child.pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return Number(fields[11]) + Number(fields[12]); // utime + stime, in clock ticks (1/100 s)
  }

  /** Starts a measured run: CPU from now, peak RSS and event-loop delay reset. */
  async beginRun(): Promise<void> {
    this.#cpuTicks = await this.#ticks();
    this.#cpuAt = Date.now();
    await writeFile(`/proc/${this.child.pid}/clear_refs`, '5').catch(() => undefined); // resets VmHWM
    await this.#eventLoopP99(); // a scrape resets prom-client's event-loop histogram
  }

  async endRun(): Promise<{ cpuPercent: number; peakRssMb: number; eventLoopP99Ms: number }> {
    const ticks = (await this.#ticks()) - this.#cpuTicks;
    const seconds = (Date.now() - this.#cpuAt) / 1000;
    const status = await readFile(`/proc/${this.child.pid}/status`, 'utf8');
    const hwm = Number(/VmHWM:\s+(\d+) kB/.exec(status)?.[1] ?? 0);
    return { cpuPercent: Math.round(ticks / seconds), peakRssMb: Math.round(hwm / 1024), eventLoopP99Ms: Math.round((await this.#eventLoopP99()) * 10) / 10 };
  }

  async #eventLoopP99(): Promise<number> {
    const text = await (await fetch(this.metricsUrl)).text();
    return Number(/^nodejs_eventloop_lag_p99_seconds (\S+)/m.exec(text)?.[1] ?? NaN) * 1000;
  }

  async stop(signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    const exited = new Promise((resolve) => this.child.once('exit', resolve));
    this.child.kill(signal);
    // A daemon that does not stop within its shutdown bound is killed: the bench never hangs here.
    await withDeadline(exited, 30_000, `${this.name} stop`).catch(() => {
      this.child.kill('SIGKILL');
      return exited;
    });
  }
}
