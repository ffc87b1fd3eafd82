import { readFile, readdir } from 'node:fs/promises';
import path from 'node:path';

// Where the CPU of a measured window went, per process, in microseconds per item delivered. On a
// 2-core machine the WAL paths share the cores with the receiver and Postgres, while the raw
// baseline is a bare client and the receiver: these figures say what each side costs per
// delivery, which the throughput ratio alone cannot.

const TICK_US = 10_000; // Linux clock ticks are 1/100 s (CLK_TCK)

async function statFields(pid: number): Promise<string[] | null> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => null);
  return stat === null ? null : stat.slice(stat.lastIndexOf(')') + 2).split(' ');
}

/** utime + stime of a process, in microseconds (0 once it is gone). */
export async function processCpuUs(pid: number): Promise<number> {
  const f = await statFields(pid);
  return f ? (Number(f[11]) + Number(f[12])) * TICK_US : 0;
}

/**
 * The whole Postgres cluster: the postmaster with what its exited children used (cutime +
 * cstime), plus every live child. A backend that exits inside the window moves its CPU from the
 * second sum to the first, so the total stays whole.
 */
export async function postgresCpuUs(dataDir: string): Promise<number> {
  const postmaster = Number((await readFile(path.join(dataDir, 'postmaster.pid'), 'utf8')).split('\n')[0]);
  const own = await statFields(postmaster);
  let total = own ? (Number(own[11]) + Number(own[12]) + Number(own[13]) + Number(own[14])) * TICK_US : 0;
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const f = await statFields(Number(entry));
    if (f && Number(f[1]) === postmaster) total += (Number(f[11]) + Number(f[12])) * TICK_US;
  }
  return total;
}

export type CpuSources = Record<string, () => Promise<number>>;

/** Starts a window; `end(items)` gives each source's CPU per item, in µs, over the window. */
export async function cpuWindow(sources: CpuSources): Promise<{ end(items: number): Promise<Record<string, number>> }> {
  const names = Object.keys(sources);
  const before = await Promise.all(names.map((n) => sources[n]!()));
  return {
    async end(items) {
      const after = await Promise.all(names.map((n) => sources[n]!()));
      return Object.fromEntries(names.map((n, i) => [n, items > 0 ? Math.round((after[i]! - before[i]!) / items) : 0]));
    },
  };
}

/** This process (the bench: the raw client, the writer). */
export const benchCpuUs = async (): Promise<number> => {
  const u = process.cpuUsage();
  return u.user + u.system;
};
