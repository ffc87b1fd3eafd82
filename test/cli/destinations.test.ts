import { randomBytes } from 'node:crypto';
import { expect } from 'chai';
import { managementClient } from '../support/api.js';
import { NATS_URL, uniqueName } from '../support/brokers.js';
import { walgate } from '../support/cli.js';
import type { HttpClient } from '../support/http.js';
import { startPipeline, type Pipeline } from '../delivery/support.js';

// `walgate destinations create|show|update|delete` (docs/cli.md): the twins of
// /api/rest/_destinations, scoped by --project and --environment as the other commands. What the
// CLI does the API sees, the API's refusals come back as its messages, and a password or token
// (from an option or standard input) is never printed.

describe('the walgate CLI: destinations', function () {
  this.timeout(60_000);
  let p: Pipeline;
  let api: HttpClient;
  const ALLOW = { WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' };
  const scope = ['--project', 'shop'];
  const cli = (args: string[], input?: string) => walgate(p.t, ['destinations', ...args, ...scope], ALLOW, input);

  before(async () => {
    p = await startPipeline();
    api = await managementClient(p.t, 'shop');
  });
  after(() => p?.close());

  it('creates (the password from standard input), shows, updates and deletes a destination the API sees; secrets never printed', async () => {
    const name = uniqueName('cli').replaceAll('_', '-');
    const created = await cli(
      ['create', name, '--kind', 'nats', '--url', NATS_URL, '--username', 'walgate', '--password-stdin'],
      'pa55-from-stdin\n',
    );
    expect(created.code, created.stderr).to.equal(0);
    const { destination } = JSON.parse(created.stdout);
    expect(destination).to.include({ name, kind: 'nats', url: NATS_URL });
    expect(destination.credentials).to.deep.equal({ username: true, password: true, token: false });
    expect(created.stdout + created.stderr).not.to.contain('pa55-from-stdin');
    const seen = await api.get(`/api/rest/_destinations/${destination.id}`);
    expect(seen.status).to.equal(200);
    expect(seen.body.destination).to.deep.equal(destination);

    // By name or by id; a token is nats-only and not with a username: the API's rule, its words.
    const refused = await cli(['update', name, '--token', 'tok-value-1']);
    expect(refused.code).to.equal(1);
    expect(refused.stderr)
      .to.match(/^walgate: token /)
      .and.not.contain('tok-value-1');
    const updated = await cli(
      ['update', destination.id, '--clear', 'username', 'password', '--token-stdin', '--url', 'nats://localhost:4222'],
      'tok-value-2',
    );
    expect(updated.code, updated.stderr).to.equal(0);
    expect(JSON.parse(updated.stdout).destination).to.include({ url: 'nats://localhost:4222' });
    expect(JSON.parse(updated.stdout).destination.credentials).to.deep.equal({ username: false, password: false, token: true });
    expect(updated.stdout).not.to.contain('tok-value-2');
    expect((await api.get(`/api/rest/_destinations/${destination.id}`)).body.destination.credentials.token).to.equal(true);

    const listed = await cli(['list']);
    expect(listed.stdout).to.contain(name).and.to.contain('token');

    // In use: refused with the API's 409 message, naming the subscription.
    const hook = await api.post('/api/rest/_webhooks', {
      projectId: 'shop',
      environment: 'master',
      table: 'orders',
      events: ['INSERT'],
      secret: `whsec_${randomBytes(24).toString('base64')}`,
      destination: { name, subject: 'cli.{table}' },
    });
    expect(hook.status, JSON.stringify(hook.body)).to.equal(201);
    const shown = await cli(['show', name]);
    expect(JSON.parse(shown.stdout).subscriptions).to.deep.equal([hook.body.webhook.id]);
    const inUse = await cli(['delete', name]);
    expect(inUse.code).to.equal(1);
    expect(inUse.stderr.trim()).to.equal(
      `walgate: Subscriptions deliver to this destination (${hook.body.webhook.id}): delete them or move them to another first.`,
    );
    await api.delete(`/api/rest/_webhooks/${hook.body.webhook.id}`);
    const deleted = await cli(['delete', name]);
    expect(deleted.code, deleted.stderr).to.equal(0);
    expect(deleted.stdout.trim()).to.equal(`deleted destination ${destination.id}`);
    expect((await api.get(`/api/rest/_destinations/${destination.id}`)).status).to.equal(404);
  });

  it('refuses what the API refuses, with its messages: a bad name, kind or URL, a taken name, an unknown destination', async () => {
    const bad = await cli(['create', 'Bad Name', '--kind', 'kafka', '--url', 'nats://127.0.0.1:4222']);
    expect(bad.code).to.equal(1);
    expect(bad.stderr).to.contain('name must be 1-63 characters').and.to.contain('kind must be "nats" or "rabbitmq"');
    const name = uniqueName('twice').replaceAll('_', '-');
    expect((await cli(['create', name, '--kind', 'nats', '--url', NATS_URL])).code).to.equal(0);
    const taken = await cli(['create', name, '--kind', 'nats', '--url', NATS_URL]);
    expect(taken.stderr.trim()).to.equal(`walgate: name a destination named "${name}" exists in this environment`);
    const creds = await cli(['create', uniqueName('x').replaceAll('_', '-'), '--kind', 'nats', '--url', 'nats://u:p@127.0.0.1:4222']);
    expect(creds.code).to.equal(1);
    expect(creds.stderr).to.match(/^walgate: url /);
    const missing = await cli(['delete', 'no-such-destination']);
    expect(missing.stderr.trim()).to.equal('walgate: no destination no-such-destination in shop/master');
    const twoSecrets = await cli(['create', 'x', '--kind', 'nats', '--url', NATS_URL, '--password-stdin', '--token-stdin'], 'a');
    expect(twoSecrets.stderr).to.contain('only one of --password-stdin and --token-stdin');
    const nothing = await cli(['update', name]);
    expect(nothing.stderr.trim()).to.equal('walgate: nothing to change: give --url, a credential or --clear');
    expect((await cli(['delete', name])).code).to.equal(0);
  });
});
