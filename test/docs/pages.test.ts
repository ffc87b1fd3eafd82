import { readFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import path from 'node:path';
import { expect } from 'chai';
import { freePort } from '../../src/core/db/embedded.js';
import { totp } from '../auth/mfa/support.js';
import { checkoutLikeDirectory, cleanEnv, ROOT, ShellSession, startService, stop, type Service } from '../support/shell-session.js';

// The shell blocks of the pages a newcomer reads after the README's walkthrough — webhooks, MFA,
// the admin API — run as written, in one POSIX shell session (dash), against `npm start` on a fresh
// data directory. What a reader fills in is filled in here, and only that: the port (a free one),
// the token and Postgres URL npm start printed, the ids the previous command answered (the pages
// write `wh_…`, `6f1c…`, `mfa_Zk3x…`), and the authenticator app's codes. Every HTTP answer must be
// a 2xx: curl is wrapped so that it reports each status (on stderr, so that `| jq` still reads
// the body alone).

function blocksOf(page: string): string[] {
  const text = readFileSync(path.join(ROOT, page), 'utf8');
  return [...text.matchAll(/^```sh\n([\s\S]*?)^```/gm)].map((m) => m[1]!);
}

const statusesIn = (output: string) => [...output.matchAll(/^\[http (\d{3})\]$/gm)].map((m) => Number(m[1]));
const field = (output: string, name: string) => {
  const value = new RegExp(`"${name}":"([^"]+)"`).exec(output)?.[1];
  expect(value, `${name} in ${output}`).to.be.a('string');
  return value!;
};

describe('docs pages: their shell blocks run as written against npm start, under sh', function () {
  this.timeout(240_000);
  let dir: string;
  let service: Service | undefined;
  let shell: ShellSession;
  let port: number;

  /** Runs a piece of a page, as the reader adapted it; every command and every answer succeeded. */
  const run = async (script: string, answers?: number[]) => {
    const adapted = script
      .replaceAll('localhost:3000', `localhost:${port}`)
      .replace(/^T=wgm_….*$/m, `T='${service!.managementToken}'`)
      .replace(/^PG=.*$/m, `PG='${service!.postgresUrl}'`)
      .replaceAll('npx walgate', 'node bin/walgate.js');
    const { output, status } = await shell.run(adapted);
    expect(status, `${adapted}\n${output}`).to.equal(0);
    const statuses = statusesIn(output);
    if (answers) expect(statuses, `${adapted}\n${output}`).to.deep.equal(answers);
    expect(output, 'no command of the page is unknown to sh').not.to.match(/not found|Syntax error|Bad substitution/);
    return output;
  };

  before(async () => {
    dir = await checkoutLikeDirectory('walgate-docs-pages-');
    port = await freePort();
    service = await startService(dir, { ...cleanEnv(), PORT: String(port), TAILER_PORT: String(await freePort()) });
    expect(service.managementToken, 'npm start printed the demo project token').to.match(/^wgm_/);
    shell = new ShellSession(dir, cleanEnv());
    await shell.run(`curl() { command curl -w '%{stderr}\\n[http %{http_code}]\\n' "$@"; }`);
  });
  after(async () => {
    shell?.close();
    await stop(service);
    await rm(dir, { recursive: true, force: true });
  });

  it('docs/webhooks.md: create, list, get, pause, replay and delete a subscription', async () => {
    // This machine has no DNS beyond the package registries, and walgate resolves a subscription's
    // host when it is created: example.com becomes an address of it (validated, never contacted —
    // nothing is inserted into the table, so nothing is delivered).
    const [block] = blocksOf('docs/webhooks.md').map((b) => b.replace('https://example.com/hooks', 'https://93.184.216.34/hooks'));
    // The commands after the create name the id it answered (the page writes wh_…).
    const cut = block!.indexOf('\n', block!.indexOf('limit=10'));
    const created = await run(block!.slice(0, cut), [201, 200]);
    const id = field(created, 'id');
    expect(id).to.match(/^wh_/);
    await run(block!.slice(cut).replaceAll('wh_…', id), [200, 200, 202, 204]);
  });

  it('docs/mfa.md: enrol an authenticator app, sign in with the second step, require MFA', async () => {
    // The account the README's walkthrough signs up.
    await run(`node bin/walgate.js users create ada@example.com --project demo --password 'correct horse battery staple' --verified`);
    const [walkthrough, requireMfa] = blocksOf('docs/mfa.md');
    const [setup, ...steps] = walkthrough!.split(/^(?=# \d\. )/m);
    expect(steps).to.have.length(5);
    await run(setup!);
    await run(steps[0]!); // a token pair into ACCESS (| jq)
    const enrolled = await run(steps[1]!, [200]);
    const [factorId, secret] = [field(enrolled, 'factorId'), field(enrolled, 'secret')];
    const verified = await run(steps[2]!.replaceAll('6f1c…', factorId).replace('"492039"', `"${totp(secret, new Date())}"`), [200]);
    expect(verified).to.match(/"recoveryCodes":\[/);
    const stepUp = await run(steps[3]!, [200]);
    expect(stepUp).to.contain('"mfaRequired":true');
    // The app's next code: the one verify used is spent (a code counts once per 30-second step).
    const next = totp(secret, new Date(), -1);
    const signedIn = await run(steps[4]!.replaceAll('mfa_Zk3x…', field(stepUp, 'mfaToken')).replaceAll('6f1c…', factorId).replace('"118263"', `"${next}"`), [200]);
    expect(field(signedIn, 'tokenType')).to.equal('Bearer');

    await run(`MANAGEMENT_TOKEN='${service!.managementToken}'`);
    expect(await run(requireMfa!, [200])).to.contain('"mfa":"required"');
  });

  it('docs/admin-api.md: create a user over HTTP, then the walgate users commands', async () => {
    // What the page's opening asks for: a project, its management token, and where walgate is.
    await run(`node bin/walgate.js project create shop >/dev/null
TOKEN=$(node bin/walgate.js token create --project shop | tail -1)
WALGATE=http://localhost:3000`);
    const [create, commands] = blocksOf('docs/admin-api.md');
    expect(await run(create!, [201])).to.contain('"email":"ada@example.com"');
    // Each line is a command of its own: each must succeed, not only the last.
    const outputs: string[] = [];
    for (const line of commands!.split('\n').filter((l) => l.trim())) outputs.push(await run(line));
    expect(outputs.join('\n')).to.contain('grace@example.com');
  });
});
