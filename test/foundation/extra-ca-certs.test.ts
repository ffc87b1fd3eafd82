import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { extraCaCertsProblem } from '../../src/main/extra-ca-certs.js';
import { testCertificates } from '../support/tls.js';

// A NODE_EXTRA_CA_CERTS that Node cannot load was printed as "Warning: Ignoring extra certs …,
// load failed" four times by `npm start` — once per node process: npm, the prestart's npm, tsc, and
// walgate — and walgate then ran without the CA. Now the build runs without the variable (a
// compiler trusts no receiver), and walgate says once what is wrong, naming the variable, and stops.

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const NODE_WARNING = /Ignoring extra certs from/g;

function run(command: string, args: string[], cwd: string, env: NodeJS.ProcessEnv): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d));
    child.stderr.on('data', (d: Buffer) => (output += d));
    child.on('error', reject);
    child.on('exit', (code) => resolve({ code, output }));
  });
}

describe('NODE_EXTRA_CA_CERTS that Node cannot load', function () {
  this.timeout(60_000);
  let dir: string;
  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'walgate-extra-ca-'));
  });
  after(() => rm(dir, { recursive: true, force: true }));

  it('is named with the path it resolved to: missing, or holding no certificate; a CA file passes', async () => {
    expect(extraCaCertsProblem({}, dir)).to.equal(undefined);
    expect(extraCaCertsProblem({ NODE_EXTRA_CA_CERTS: '' }, dir)).to.equal(undefined);
    const missing = extraCaCertsProblem({ NODE_EXTRA_CA_CERTS: 'walkthrough/receiver.pem' }, dir);
    expect(missing)
      .to.contain('NODE_EXTRA_CA_CERTS=walkthrough/receiver.pem')
      .and.contain(path.join(dir, 'walkthrough/receiver.pem'))
      .and.contain('ENOENT');

    // A key where the certificate belongs: Node adds nothing and says nothing.
    const { ca, key } = await testCertificates();
    await writeFile(path.join(dir, 'key.pem'), key);
    expect(extraCaCertsProblem({ NODE_EXTRA_CA_CERTS: 'key.pem' }, dir)).to.contain('holds no PEM certificate');
    await writeFile(path.join(dir, 'ca.pem'), ca);
    expect(extraCaCertsProblem({ NODE_EXTRA_CA_CERTS: 'ca.pem' }, dir)).to.equal(undefined);
    expect(extraCaCertsProblem({ NODE_EXTRA_CA_CERTS: path.join(dir, 'ca.pem') }, '/')).to.equal(undefined);
  });

  it('npm start stops before anything starts, saying so once, with no Postgres left in its DATA_DIR', async () => {
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      NODE_EXTRA_CA_CERTS: 'walkthrough/receiver.pem',
      DATA_DIR: path.join(dir, 'data'),
      PORT: '0',
      TAILER_PORT: '0',
    };
    delete env.DATABASE_URL;
    const { code, output } = await run(process.execPath, [path.join(ROOT, 'dist/src/main/dev.js')], dir, env);
    expect(code, output).to.equal(1);
    // Node's own warning of this process (printed before any JavaScript runs), then walgate's line.
    expect(output.match(NODE_WARNING) ?? [], output).to.have.length(1);
    expect(
      output.match(/^walgate: NODE_EXTRA_CA_CERTS=walkthrough\/receiver\.pem: cannot read .*receiver\.pem \(ENOENT\)/gm) ?? [],
      output,
    ).to.have.length(1);
    expect(existsSync(path.join(dir, 'data', 'pg')), 'no embedded cluster was made').to.equal(false);
  });

  it("npm start's build runs without the variable: npm, the build and the compiler do not repeat the warning", async () => {
    // The real prestart line, through the real npm, in a package whose build and start are no-op
    // node processes: the warning comes from the npm the user ran and from the start, not from
    // the build in between (before: npm, npm run build and its node, then the start — four).
    const { scripts } = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
    const sandbox = path.join(dir, 'package');
    await mkdir(sandbox);
    const noop = 'node -e 0';
    await writeFile(
      path.join(sandbox, 'package.json'),
      JSON.stringify({ name: 'x', version: '1.0.0', scripts: { prestart: scripts.prestart, build: noop, start: noop } }),
    );
    const { code, output } = await run('npm', ['start'], sandbox, { ...process.env, NODE_EXTRA_CA_CERTS: 'missing.pem' });
    expect(code, output).to.equal(0);
    expect(scripts.prestart).to.match(/npm run build$/);
    expect(output.match(NODE_WARNING) ?? [], output).to.have.length(2);
  });
});
