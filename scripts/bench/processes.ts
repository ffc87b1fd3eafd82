import { spawn, type ChildProcess } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';

// Daemons run as child processes, as in production, so that their CPU, peak RSS and event-loop
// delay can be read per run.

// The entries production runs (the api's is CommonJS: it sizes libuv's pool first).
const MAIN = (name: 'api' | 'tailer') => fileURLToPath(new URL(`../../src/main/${name === 'api' ? 'api.cjs' : 'tailer.js'}`, import.meta.url));

export class Daemon {
  #cpuAt = 0;
  #cpuTicks = 0;
  constructor(
    readonly name: string,
    readonly child: ChildProcess,
    readonly metricsUrl: string,
  ) {}

  static async start(name: 'api' | 'tailer', env: NodeJS.ProcessEnv, metricsUrl: string): Promise<Daemon> {
    // BENCH_PROFILE=tailer (or api) writes a CPU profile of that daemon under bench/profiles/.
    const profile = process.env.BENCH_PROFILE === name ? ['--cpu-prof', `--cpu-prof-dir=${fileURLToPath(new URL('../../../bench/profiles/', import.meta.url))}`] : [];
    const child = spawn(process.execPath, [...profile, MAIN(name)], { env, stdio: ['ignore', 'ignore', 'pipe'] });
    child.stderr!.on('data', (d: Buffer) => process.stderr.write(`[${name}] ${d}`));
    const daemon = new Daemon(name, child, metricsUrl);
    const until = Date.now() + 30_000;
    for (;;) {
      const ok = await fetch(metricsUrl.replace('/metrics', '/healthz')).then((r) => r.ok, () => false);
      if (ok) break;
      if (child.exitCode !== null || Date.now() > until) throw new Error(`${name} did not start`);
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
    if (this.child.exitCode !== null) return;
    const exited = new Promise((resolve) => this.child.once('exit', resolve));
    this.child.kill(signal);
    await exited;
  }
}
