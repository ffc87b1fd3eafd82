import { existsSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { bearer, signUpAndConfirm, startAuthApi } from '../auth/support.js';
import type { TestApi } from '../support/api.js';
import { walgate } from '../support/cli.js';
import { HttpClient } from '../support/http.js';

describe('the walgate CLI', function () {
  this.timeout(60_000);
  let t: TestApi;
  before(async () => {
    t = await startAuthApi();
  });
  after(() => t.close());

  it('has --help on every command', async () => {
    for (const args of [
      [],
      ['migrate'],
      ['worker'],
      ['project', 'create'],
      ['project', 'set'],
      ['project', 'list'],
      ['token', 'create'],
      ['token', 'list'],
      ['token', 'revoke'],
      ['keys', 'rotate'],
      ['keys', 'list'],
      ['users', 'logout'],
      ['deliveries', 'replay'],
      ['destinations', 'list'],
      ['destinations', 'show'],
      ['destinations', 'create'],
      ['destinations', 'update'],
      ['destinations', 'delete'],
    ]) {
      const r = await walgate(t, [...args, '--help']);
      expect(r.code, args.join(' ')).to.equal(0);
      expect(r.stdout).to.match(/^Usage: walgate/);
    }
    // The destinations commands mirror /api/rest/_destinations.
    const destinations = await walgate(t, ['destinations', '--help']);
    for (const command of ['list', 'show', 'create', 'update', 'delete'])
      expect(destinations.stdout).to.match(new RegExp(`^  ${command} `, 'm'));
    expect((await walgate(t, ['destinations', 'create', '--help'])).stdout)
      .to.contain('--password-stdin')
      .and.to.contain('--token-stdin');
  });

  it('creates, changes and lists projects; the schema defaults to <project>_<environment>', async () => {
    const created = await walgate(t, ['project', 'create', 'Acme-1', '--environment', 'Prod']);
    expect(created.code, created.stderr).to.equal(0);
    expect(created.stdout).to.contain('schema acme_1_prod');
    const { rows } = await t.ctx.pool.query(`SELECT 1 FROM pg_namespace WHERE nspname = 'acme_1_prod'`);
    expect(rows).to.have.length(1);
    const custom = await walgate(t, ['project', 'create', 'acme2', '--schema', 'public', '--auth', 'off', '--token-format', 'jwe']);
    expect(custom.stdout).to.contain('schema public, auth off, tokens jwe');
    const set = await walgate(t, ['project', 'set', 'acme2', '--auth', 'on']);
    expect(set.stdout).to.contain('auth on');
    const list = await walgate(t, ['project', 'list', '--json']);
    const projects = JSON.parse(list.stdout);
    expect(projects).to.deep.include({
      project: 'acme2',
      environment: 'master',
      schema: 'public',
      auth: 'on',
      tokens: 'jwe',
      created: projects.find((p: any) => p.project === 'acme2').created,
    });
    const dup = await walgate(t, ['project', 'create', 'acme2']);
    expect(dup.code).to.equal(1);
    expect(dup.stderr).to.contain('already exists');
    const bad = await walgate(t, ['project', 'create', 'bad name!']);
    expect(bad.code).to.equal(1);
    expect(bad.stderr).to.contain('invalid project id');
    const badFormat = await walgate(t, ['project', 'set', 'acme2', '--token-format', 'xml']);
    expect(badFormat.code).not.to.equal(0);
    expect(badFormat.stderr).to.contain('Allowed choices are jws, jwe');
  });

  it('creates a management token (alone on the last line), lists and revokes it', async () => {
    await walgate(t, ['project', 'create', 'tokens']);
    const created = await walgate(t, ['token', 'create', '--project', 'tokens', '--name', 'ci']);
    expect(created.code, created.stderr).to.equal(0);
    const lines = created.stdout.trim().split('\n');
    const token = lines[lines.length - 1]!;
    expect(token).to.match(/^wgm_[A-Za-z0-9_-]{43}$/);
    const id = /created (mt_[0-9a-f]+)/.exec(created.stdout)![1]!;
    const list = await walgate(t, ['token', 'list', '--project', 'tokens']);
    expect(list.stdout).to.contain(id).and.to.contain('ci');
    expect(list.stdout).not.to.contain(token);
    expect((await walgate(t, ['token', 'revoke', id])).stdout).to.contain(`revoked ${id}`);
    const again = await walgate(t, ['token', 'revoke', id]);
    expect(again.code).to.equal(1);
    const none = await walgate(t, ['token', 'create', '--project', 'missing']);
    expect(none.code).to.equal(1);
    expect(none.stderr).to.contain('no project missing');
  });

  it('rotates keys: the JWKS shows the new next key, and old tokens keep working', async () => {
    const { http } = await t.provision({ projectId: 'rot', name: 'master' });
    const account = await signUpAndConfirm(t, http);
    const before = (await http.get('/auth/.well-known/jwks.json')).body.keys.map((k: { kid: string }) => k.kid);
    const r = await walgate(t, ['keys', 'rotate', '--project', 'rot']);
    expect(r.code, r.stderr).to.equal(0);
    const after = (await http.get('/auth/.well-known/jwks.json')).body.keys.map((k: { kid: string }) => k.kid);
    expect(after).to.include.members(before);
    expect(after).to.have.length(3);
    expect((await http.get('/auth/me', bearer(account.accessToken))).status).to.equal(200);
    const list = await walgate(t, ['keys', 'list', '--project', 'rot']);
    expect(list.stdout)
      .to.match(/next/)
      .and.match(/active/)
      .and.match(/retired/);
  });

  it('one schema belongs to one environment: a collision is refused, naming the owner and --schema', async () => {
    expect((await walgate(t, ['project', 'create', 'Tenant'])).stdout).to.contain('schema tenant_master');
    // `tenant` gets the same default schema; `other` asks for it by name, in another letter case.
    for (const args of [['tenant'], ['other', '--schema', 'tenant_master'], ['other', '--schema', 'Tenant_Master']]) {
      const r = await walgate(t, ['project', 'create', ...args]);
      expect(r.code, args.join(' ')).to.equal(1);
      expect(r.stderr.trim()).to.match(
        /^walgate: schema \S+ already belongs to Tenant\/master; give this environment its own with --schema <name>$/i,
      );
    }
    const taken = await walgate(t, ['project', 'create', 'tenant', '--schema', 'tenant_two']);
    expect(taken.code, taken.stderr).to.equal(0);
    // The database itself refuses a second owner, whoever writes.
    const direct = await t.ctx.pool
      .query(`INSERT INTO walgate.environments (project_id, name, schema_name) VALUES ('tenant', 'copy', 'TENANT_MASTER')`)
      .catch((err: { constraint?: string }) => err.constraint);
    expect(direct).to.equal('environments_schema_name_key');
    const { rows } = await t.ctx.pool.query(`SELECT project_id, name FROM walgate.environments WHERE lower(schema_name) = 'tenant_master'`);
    expect(rows).to.deep.equal([{ project_id: 'Tenant', name: 'master' }]);
  });

  it('force-logs a user out: their tokens are refused at once', async () => {
    const { http } = await t.provision({ projectId: 'force', name: 'master' });
    const account = await signUpAndConfirm(t, http);
    const r = await walgate(t, ['users', 'logout', '--project', 'force', '--email', account.email]);
    expect(r.stdout).to.contain('ended 1 session');
    const me = await new HttpClient(t.url, { 'x-project-id': 'force' }).get('/auth/me', bearer(account.accessToken));
    expect(me.status).to.equal(401);
    expect((await http.post('/auth/refresh-token', { refreshToken: account.refreshToken })).status).to.equal(401);
  });

  it('without DATABASE_URL or a cluster under DATA_DIR, says where it looked and creates nothing; --create-database creates one', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'walgate-cli-'));
    try {
      const dataDir = dir; // (a directory of its own: Postgres, run as another user under root, must reach it)
      const env = { DATABASE_URL: '', DATA_DIR: dataDir };
      const refused = await walgate(t, ['project', 'list'], env);
      expect(refused.code).to.equal(1);
      for (const hint of [dataDir, 'DATABASE_URL', 'DATA_DIR', 'npm start', 'docker compose exec api', '--create-database'])
        expect(refused.stderr, hint).to.contain(hint);
      expect(refused.stdout).to.equal('');
      expect(await readdir(dataDir), 'no cluster was created').to.deep.equal([]);

      const created = await walgate(t, ['--create-database', 'project', 'list'], env);
      expect(created.code, created.stderr).to.equal(0);
      expect(existsSync(path.join(dataDir, 'pg', 'PG_VERSION'))).to.equal(true);
      // The CLI started that cluster for the command, so it stopped it again.
      expect(
        await readFile(path.join(dataDir, 'pg', 'postmaster.pid')).then(
          () => 'running',
          () => 'stopped',
        ),
      ).to.equal('stopped');
      // Now there is one: the same command finds it without the flag.
      expect((await walgate(t, ['project', 'list'], env)).code).to.equal(0);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('`walgate worker` without DELIVERY_BUS says it needs one and exits 1', async () => {
    const r = await walgate(t, ['worker'], { DELIVERY_BUS: '' });
    expect(r.code).to.equal(1);
    expect(r.stderr).to.contain('DELIVERY_BUS is required');
  });

  it('names a bad environment variable and exits 1', async () => {
    const r = await walgate(t, ['project', 'list'], { PORT: 'eighty' });
    expect(r.code).to.equal(1);
    expect(r.stderr).to.contain('PORT');
  });

  it('replays dead letters: a dry run counts, a replay moves them back to pending (also through scripts/)', async () => {
    const { execFile } = await import('node:child_process');
    await t.provision({ projectId: 'dl', name: 'master' });
    await t.ctx.pool.query('CREATE TABLE dl_master.t (id int PRIMARY KEY)');
    const { insertSubscription } = await import('../support/subscriptions.js');
    const a = await insertSubscription(t.ctx, { projectId: 'dl', environment: 'master', schema: 'dl_master', table: 't' });
    const b = await insertSubscription(t.ctx, { projectId: 'dl', environment: 'master', schema: 'dl_master', table: 't' });
    for (const [id, wh, at] of [
      ['del_1', a, '2026-01-01T00:00:00Z'],
      ['del_2', a, '2026-03-01T00:00:00Z'],
      ['del_3', b, '2026-03-01T00:00:00Z'],
    ]) {
      await t.ctx.pool.query(
        `INSERT INTO walgate.deliveries (id, webhook_id, event_id, event_type, status, attempts, next_attempt_at, created_at) VALUES ($1, $2, $1, 'INSERT', 'dead', 5, now(), $3)`,
        [id, wh, at],
      );
    }
    const dry = await walgate(t, ['deliveries', 'replay', '--dry-run']);
    expect(dry.stdout).to.contain('3 dead-letter deliveries would be replayed');
    const one = await walgate(t, ['deliveries', 'replay', '--webhook', a, '--since', '2026-02-01T00:00:00Z']);
    expect(one.code, one.stderr).to.equal(0);
    expect(one.stdout).to.contain('replayed 1 dead-letter delivery');
    expect(one.stderr).to.contain('replayed: 1');
    const script = await new Promise<string>((resolve) =>
      execFile(
        'scripts/replay-dead-letters.sh',
        ['--until', '2026-02-01T00:00:00Z'],
        {
          env: {
            ...process.env,
            DATABASE_URL: t.database.url,
            KEY_ENCRYPTION_KEY: t.config.keyEncryptionKey!.toString('base64'),
            LOG_LEVEL: 'warn',
          },
        },
        (_e, out) => resolve(out),
      ),
    );
    expect(script).to.contain('replayed 1 dead-letter delivery');
    const { rows } = await t.ctx.pool.query(`SELECT id, status, attempts FROM walgate.deliveries ORDER BY id`);
    expect(rows.map((r) => `${r.id}:${r.status}:${r.attempts}`)).to.deep.equal(['del_1:pending:0', 'del_2:pending:0', 'del_3:dead:5']);
    const bad = await walgate(t, ['deliveries', 'replay', '--since', 'yesterday']);
    expect(bad.code).not.to.equal(0);
    expect(bad.stderr).to.contain('ISO 8601');
  });
});
