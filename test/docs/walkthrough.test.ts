import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import path from 'node:path';
import { expect } from 'chai';
import { freePort } from '../../src/core/db/embedded.js';
import { background, checkoutLikeDirectory, cleanEnv, ROOT, ShellSession, startService as start, stop, until, type Background } from '../support/shell-session.js';

// The README's five-minute walkthrough, run as written: every ```sh block of the section in order,
// in one POSIX shell session (`sh`: dash here, so that bash-only syntax a newcomer on another shell
// would trip on fails the test), in a fresh directory, against `npm start` (its compiled entry) on a fresh
// data directory. What differs from a newcomer's run, and only that: ports are free ones instead
// of 3000 and 8443 (the machine is shared), the Postgres URL line gets the URL the banner printed
// (the README says to paste it), and `npx walgate` is `node bin/walgate.js` (npx finds the project's
// own bin only inside its checkout; this directory links to it).

function walkthroughBlocks(): string[] {
  const readme = readFileSync(path.join(ROOT, 'README.md'), 'utf8');
  const start = readme.indexOf('\n## Five-minute walkthrough\n');
  expect(start).to.be.greaterThan(-1);
  const section = readme.slice(start, readme.indexOf('\n## ', start + 1));
  return [...section.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]!);
}

describe('README: the five-minute walkthrough, run as written', function () {
  this.timeout(240_000);
  let dir: string;
  let service: Background | undefined;
  let receiver: Background | undefined;
  let shell: ShellSession | undefined;
  before(async () => {
    dir = await checkoutLikeDirectory('walgate-walkthrough-');
  });
  after(async () => {
    await stop(receiver);
    await stop(service);
    shell?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('signs up, confirms, logs in, calls /auth/me, subscribes, inserts, and verifies the signed delivery', async () => {
    const [port, receiverPort] = [await freePort(), await freePort()];
    const ports = (text: string) => text.replaceAll('localhost:3000', `localhost:${port}`).replaceAll('8443', String(receiverPort));
    let postgresUrl = '';
    const startService = async (line: string) => {
      await stop(service);
      const assignments = Object.fromEntries([...line.matchAll(/(\w+)=(\S+)\s/g)].map((m) => [m[1]!, m[2]!]));
      expect(line.trim()).to.match(/npm start$/);
      const started = await start(dir, { ...cleanEnv(), ...assignments, PORT: String(port), TAILER_PORT: String(await freePort()) });
      service = started;
      postgresUrl = started.postgresUrl;
    };

    // One shell session, as in a terminal: each block's variables and functions stay for the next.
    shell = new ShellSession(dir, cleanEnv());
    const run = (script: string) => shell!.run(script);

    await startService('npm start');
    const outputs: string[] = [];
    for (const block of walkthroughBlocks()) {
      const text = ports(block);
      if (/^[^#\n]*npm start\s*$/m.test(text)) {
        await startService(text);
        continue;
      }
      if (text.includes('node walkthrough/receiver.mjs')) {
        const [setup] = text.split(/^node walkthrough\/receiver\.mjs$/m);
        expect((await run(setup!)).status).to.equal(0);
        receiver = background(process.execPath, ['walkthrough/receiver.mjs'], dir, cleanEnv());
        await until('the receiver', () => (receiver!.output().includes('receiver on') ? true : undefined));
        continue;
      }
      if (text.includes('.data/mail/')) {
        // The e-mail leaves through the mail queue after the answer: wait for it as a reader would.
        await until('the confirmation e-mail', () => (existsSync(path.join(dir, '.data/mail')) && readdirSync(path.join(dir, '.data/mail')).length ? true : undefined));
      }
      if (text.includes('walkthrough/delivery.json')) {
        // Waiting for the delivery as a reader would ("within a moment the receiver prints it").
        await until('a delivery at the receiver', () => (existsSync(path.join(dir, 'walkthrough/delivery.json')) ? true : undefined));
      }
      const script = text.replace(/^PG=.*$/m, `PG='${postgresUrl}'`).replaceAll('npx walgate', 'node bin/walgate.js');
      const { output, status } = await run(script);
      expect(status, `${script}\n${output}`).to.equal(0);
      outputs.push(output);
    }

    const all = outputs.join('\n');
    expect(all, 'the protected call answered with the user').to.match(/"email":"ada@example.com"/);
    expect(all).to.contain('signature verified');
    const delivery = JSON.parse(readFileSync(path.join(dir, 'walkthrough/delivery.json'), 'utf8')) as { headers: Record<string, string>; body: string };
    expect(delivery.headers['x-service-event']).to.equal('INSERT');
    expect(JSON.parse(delivery.body)).to.deep.include({ table: 'orders', event: 'INSERT', project_id: 'demo' });
    expect(JSON.parse(delivery.body).record).to.deep.include({ customer: 'ada@example.com' });
    expect(receiver!.output()).to.contain('INSERT');
    // What it wrote is under walkthrough/ (ignored by git) or .data/, nothing beside the checkout's
    // own files; and the secret was made here, not copied from the page.
    const checkout = ['package.json', 'node_modules', 'bin', 'dist'];
    expect(readdirSync(dir).filter((f) => !checkout.includes(f)).sort()).to.deep.equal(['.data', 'walkthrough']);
    expect(readFileSync(path.join(ROOT, '.gitignore'), 'utf8').split('\n')).to.include('walkthrough/');
    expect(readFileSync(path.join(ROOT, 'README.md'), 'utf8')).not.to.match(/SECRET=whsec_[A-Za-z0-9+/]{16,}/);
  });
});
