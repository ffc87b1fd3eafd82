import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

// Measured before: a bench stopped with SIGTERM / Ctrl-C left the receiver, the tailer and Postgres running.
describe('bench harness: a signal stops every child process and Postgres', function () {
  this.timeout(20_000);

  function alive(pid: number): boolean {
    try {
      process.kill(pid, 0);
    } catch {
      return false;
    }
    // A zombie is dead, only not yet reaped (by whoever inherited it).
    const stat = existsSync(`/proc/${pid}/stat`) ? readFileSync(`/proc/${pid}/stat`, 'utf8') : '';
    return !/^\d+ \(.*\) Z/.test(stat);
  }

  it('SIGTERM: the children are stopped (SIGKILL for one ignoring SIGTERM), the shutdown steps run, exit 143', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'walgate-harness-'));
    const marker = path.join(dir, 'postgres-stopped');
    const harness = spawn(process.execPath, [fileURLToPath(new URL('./bench-harness-child.js', import.meta.url)), marker], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    try {
      const pids = await new Promise<number[]>((resolve, reject) => {
        let out = '';
        harness.stdout!.on('data', (d: Buffer) => {
          out += d.toString();
          if (out.includes('\n')) resolve((JSON.parse(out) as { pids: number[] }).pids);
        });
        harness.once('exit', (code) => reject(new Error(`the harness exited early (${code})`)));
      });
      expect(pids).to.have.length(3);
      expect(pids.every(alive)).to.equal(true);
      const exited = new Promise<number | null>((resolve) => harness.once('exit', (code) => resolve(code)));
      harness.kill('SIGTERM');
      expect(await exited).to.equal(143);
      expect(pids.filter(alive), 'children still running').to.deep.equal([]);
      expect(readFileSync(marker, 'utf8')).to.equal('stopped');
    } finally {
      harness.kill('SIGKILL');
      await rm(dir, { recursive: true, force: true });
    }
  });
});
