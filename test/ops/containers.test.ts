import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { parse as parseYaml } from 'yaml';
import { ENV_VARIABLES, loadConfig } from '../../src/core/config.js';
import { freePort } from '../../src/core/db/embedded.js';
import { startTestApi, type TestApi } from '../support/api.js';
import { commandWords, envAssignments, parseDockerfile, type Stage } from '../support/dockerfile.js';

// No Docker engine runs here: the Dockerfile and docker-compose.yml are read as files and every
// command, path, variable and port in them is checked against the project. The health-check
// script they use is run for real against a live api.

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const read = (file: string) => readFileSync(path.join(ROOT, file), 'utf8');
const packageJson = JSON.parse(read('package.json')) as { scripts: Record<string, string> };
const defaults = loadConfig({});

/** Problems with one command's words: compiled entry points without a source, missing bin/ files, unknown npm scripts. */
function commandProblems(words: string[], imagePaths: string[]): string[] {
  const problems: string[] = [];
  words.forEach((word, i) => {
    const compiled = /^dist\/(.+)\.(c?)js$/.exec(word);
    if (compiled) {
      const source = `${compiled[1]}.${compiled[2]}ts`;
      if (!existsSync(path.join(ROOT, source))) problems.push(`${word}: no ${source} to compile it from`);
      if (!imagePaths.some((p) => word.startsWith(`${p}/`))) problems.push(`${word}: not copied into the image`);
    }
    if (word.startsWith('bin/')) {
      if (!existsSync(path.join(ROOT, word))) problems.push(`${word}: no such file`);
      if (!imagePaths.some((p) => word.startsWith(`${p}/`))) problems.push(`${word}: not copied into the image`);
    }
    if (word === 'npm' && words[i + 1] === 'run' && !(words[i + 2]! in packageJson.scripts))
      problems.push(`npm run ${words[i + 2]}: no such script`);
  });
  return problems;
}

describe('containers: Dockerfile', () => {
  const stages = parseDockerfile(read('Dockerfile'));
  const runtime = stages[stages.length - 1]!;
  const all = (stage: Stage, keyword: string) => stage.instructions.filter((i) => i.keyword === keyword);
  /** What the runtime image holds (destinations of its COPY instructions). */
  const imagePaths = () =>
    all(runtime, 'COPY').map((c) => {
      const words = c.args.split(/\s+/).filter((w) => !w.startsWith('--'));
      return path.posix.normalize(words[words.length - 1]!);
    });

  it('is multi-stage: the runtime stage takes the compiled code from the build stage', () => {
    expect(stages.length).to.be.greaterThanOrEqual(2);
    const build = stages[0]!;
    expect(all(runtime, 'COPY').some((c) => c.args.includes(`--from=${build.name}`) && c.args.includes('/dist/src'))).to.equal(true);
    for (const stage of stages) expect(stage.base, 'a Node image (the health check runs node)').to.match(/^node:\d+/);
  });

  it('installs production dependencies only, and runs as a user other than root', () => {
    const installs = all(runtime, 'RUN').filter((r) => r.args.includes('npm ci'));
    expect(installs).to.have.length(1);
    expect(installs[0]!.args).to.contain('--omit=dev');
    const users = all(runtime, 'USER');
    expect(users, 'a USER instruction').to.have.length.greaterThan(0);
    expect(users[users.length - 1]!.args).to.not.match(/^(root|0)(:|$)/);
  });

  it('copies only what exists, and keeps .data and node_modules out of the build context', () => {
    for (const stage of stages) {
      for (const copy of all(stage, 'COPY').filter((c) => !c.args.includes('--from='))) {
        const sources = copy.args.split(/\s+/).slice(0, -1);
        for (const source of sources) expect(existsSync(path.join(ROOT, source)), `COPY ${source}`).to.equal(true);
      }
    }
    const ignored = read('.dockerignore')
      .split('\n')
      .map((l) => l.trim());
    expect(ignored).to.include.members(['.data', 'node_modules', 'dist', '.git']);
  });

  it('CMD and HEALTHCHECK run compiled files that exist, with node', () => {
    const commands = [
      ...all(runtime, 'CMD').map((c) => c.args),
      ...all(runtime, 'HEALTHCHECK').map((h) => h.args.slice(h.args.indexOf('CMD ') + 4)),
    ];
    expect(commands).to.have.length(2);
    for (const args of commands) {
      const words = commandWords(args);
      expect(words[0], args).to.equal('node');
      expect(commandProblems(words, imagePaths()), args).to.deep.equal([]);
    }
  });

  it('sets only variables that walgate reads, and exposes the default ports', () => {
    const env = Object.assign({}, ...all(runtime, 'ENV').map((e) => envAssignments(e.args))) as Record<string, string>;
    expect(ENV_VARIABLES).to.include.members(Object.keys(env));
    expect(Number(env.PORT ?? defaults.port)).to.equal(defaults.port);
    expect(Number(env.TAILER_PORT ?? defaults.tailerPort)).to.equal(defaults.tailerPort);
    const exposed = all(runtime, 'EXPOSE').flatMap((e) => e.args.split(/\s+/).map(Number));
    expect(exposed).to.have.members([defaults.port, defaults.tailerPort]);
  });
});

describe('containers: docker-compose.yml', () => {
  const text = read('docker-compose.yml');
  const compose = parseYaml(text, { merge: true }) as { services: Record<string, any> };
  const services = compose.services;
  const walgate = () => Object.entries(services).filter(([, s]) => s.build !== undefined);
  const hostPortTo = (service: any, containerPort: number) =>
    (service.ports ?? []).map(String).find((p: string) => Number(p.split(':').pop()) === containerPort);

  it('runs Postgres in logical mode with a cap on WAL kept for slots, Redis, a mail catcher, api and tailer', () => {
    expect(services).to.include.all.keys('postgres', 'redis', 'mail', 'api', 'tailer');
    const settings = (services.postgres.command as string[]).filter((_, i, a) => a[i - 1] === '-c');
    expect(settings).to.include('wal_level=logical');
    expect(
      settings.some((s) => /^max_slot_wal_keep_size=\d+[KMGT]B$/.test(s)),
      'max_slot_wal_keep_size',
    ).to.equal(true);
    expect(Number(/postgres:(\d+)/.exec(services.postgres.image)![1])).to.be.greaterThanOrEqual(15);
    expect(services.api.environment.SMTP_URL).to.match(/^smtp:\/\/mail:/);
  });

  it('every service has a health check, and every dependency waits for one', () => {
    for (const [name, service] of Object.entries(services)) {
      expect(service.healthcheck?.test, `${name} has a health check`).to.be.an('array');
      for (const [dependency, how] of Object.entries<any>(service.depends_on ?? {})) {
        expect(services, `${name} depends on ${dependency}`).to.have.property(dependency);
        expect(how.condition, `${name} → ${dependency}`).to.equal('service_healthy');
      }
    }
    for (const [name, service] of walgate()) expect(service.depends_on, name).to.include.all.keys('postgres', 'redis');
  });

  it("the daemons' commands and health checks run compiled files that exist, with node, on their own /readyz", () => {
    const imagePaths = ['dist/src', 'bin', 'sql'];
    for (const [name, service] of walgate()) {
      const command = service.command as string[];
      const check = (service.healthcheck.test as string[]).slice(1); // after CMD
      for (const words of [command, check]) {
        expect(words[0], name).to.equal('node');
        expect(commandProblems(words, imagePaths), `${name}: ${words.join(' ')}`).to.deep.equal([]);
      }
      expect(check.slice(1), `${name} checks itself`).to.deep.equal(['dist/src/main/healthcheck.js', name]);
      // The api's entry is CommonJS (it sizes libuv's pool before anything starts it).
      expect(command.at(-1), name).to.equal(`dist/src/main/${name}.${name === 'api' ? 'cjs' : 'js'}`);
    }
  });

  it('sets only variables that walgate reads, and the ports agree with the configuration', () => {
    for (const [name, service] of walgate()) {
      expect(ENV_VARIABLES, `${name} environment`).to.include.members(Object.keys(service.environment));
      const config = loadConfig({ ...service.environment, KEY_ENCRYPTION_KEY: Buffer.alloc(32).toString('base64') });
      expect(config.port, `${name} PORT is the default`).to.equal(defaults.port);
      expect(config.tailerPort, `${name} TAILER_PORT is the default`).to.equal(defaults.tailerPort);
      expect(config.host, `${name} listens beyond loopback`).to.equal('0.0.0.0');
      const own = name === 'tailer' ? config.tailerPort : config.port;
      expect(hostPortTo(service, own), `${name} publishes port ${own}`).to.be.a('string');
    }
    const interpolated = [...text.matchAll(/\$\{(\w+)/g)].map((m) => m[1]!);
    expect(ENV_VARIABLES, 'variables taken from the shell').to.include.members(interpolated);
  });
});

describe('containers: the health-check script', function () {
  this.timeout(30_000);
  let t: TestApi;
  before(async () => {
    t = await startTestApi();
  });
  after(() => t.close());

  const run = async (daemon: string, env: Record<string, string>) => {
    const script = path.join(ROOT, 'dist/src/main/healthcheck.js');
    try {
      await promisify(execFile)(process.execPath, [script, daemon], {
        env: { PATH: process.env.PATH, NODE_ENV: 'test', HOST: '0.0.0.0', ...env },
        timeout: 10_000,
      });
      return 0;
    } catch (err) {
      return (err as { code: number }).code;
    }
  };

  it("exits 0 when the daemon's /readyz answers 200 on its configured port, 1 when nothing answers", async () => {
    const port = new URL(t.url).port;
    const closed = String(await freePort());
    expect(await run('api', { PORT: port })).to.equal(0);
    expect(await run('api', { PORT: closed })).to.equal(1);
    expect(await run('tailer', { TAILER_PORT: port, PORT: closed }), 'the tailer is asked on TAILER_PORT').to.equal(0);
    expect(await run('tailer', { TAILER_PORT: closed, PORT: port })).to.equal(1);
    expect(await run('nonsense', { PORT: port })).to.equal(2);
  });
});
