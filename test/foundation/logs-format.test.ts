import { execFile } from 'node:child_process';
import { promisify, stripVTControlCharacters } from 'node:util';
import { expect } from 'chai';

// `npm start` logs readable lines on a terminal and JSON lines otherwise (a file, a pipe, a
// collector). The same few lines of the logger as dev.ts sets it up, run with stdout a pipe and
// with stdout a terminal (util-linux `script` gives the child a pseudo-terminal).

const run = promisify(execFile);
const PROGRAM = `
const { consoleDestination, createLogger } = await import(${JSON.stringify(new URL('../../src/core/log.js', import.meta.url).href)});
const log = createLogger('info', await consoleDestination());
log.info({ slot: 'walgate_demo' }, 'leading: reading the slot');
`;

describe('npm start logs: pretty on a terminal, JSON otherwise', function () {
  this.timeout(30_000);
  const args = ['--input-type=module', '-e', PROGRAM];

  it('writes one JSON object per line when stdout is not a terminal', async () => {
    const { stdout } = await run(process.execPath, args);
    const line = JSON.parse(stdout.trim()) as Record<string, unknown>;
    expect(line).to.include({ msg: 'leading: reading the slot', slot: 'walgate_demo', level: 30 });
  });

  it('writes a readable line when stdout is a terminal', async function () {
    const quoted = [process.execPath, ...args].map((a) => `'${a.replaceAll("'", "'\\''")}'`).join(' ');
    const result = await run('script', ['-qec', quoted, '/dev/null']).catch(() => undefined);
    if (!result) return this.skip(); // no util-linux `script` here
    const text = stripVTControlCharacters(result.stdout);
    expect(text).to.contain('INFO');
    expect(text).to.contain('leading: reading the slot');
    expect(text).to.contain('slot: "walgate_demo"');
    expect(text).to.not.contain('{"level"');
  });
});
