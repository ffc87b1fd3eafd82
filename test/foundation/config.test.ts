import { expect } from 'chai';
import { ConfigError, loadConfig } from '../../src/core/config.js';

describe('configuration', () => {
  it('has the documented defaults', () => {
    const c = loadConfig({});
    expect(c.port).to.equal(3000);
    expect(c.host).to.equal('127.0.0.1');
    expect(c.dataDir).to.equal('.data');
    expect(c.mailFrom).to.equal('walgate <no-reply@localhost>');
    expect(c.publicUrl).to.equal('http://localhost:3000');
    expect(c.webhooks).to.deep.equal({
      allowPrivateNetworks: false,
      retryDelaysMs: [0, 1000, 5000, 30000, 300000],
      breakerFailures: 5,
      breakerMaxWaitMs: undefined,
      breakerCooldownMs: 120000,
      timeoutMs: 10000,
      secretGraceMs: 86_400_000,
      parkAfterMs: 60000,
      endpointConcurrency: 16,
      endpointConcurrencyMax: 64,
      pausedBacklogMs: 259_200_000,
      keepPayloads: true,
    });
    expect(c.tailerPort).to.equal(3001);
    expect(c.logLevel).to.equal('info');
  });

  it('WEBHOOK_ENDPOINT_CONCURRENCY_MAX below WEBHOOK_ENDPOINT_CONCURRENCY is the base: never raised', () => {
    const c = loadConfig({ WEBHOOK_ENDPOINT_CONCURRENCY: '32', WEBHOOK_ENDPOINT_CONCURRENCY_MAX: '8' });
    expect([c.webhooks.endpointConcurrency, c.webhooks.endpointConcurrencyMax]).to.deep.equal([32, 32]);
    expect(loadConfig({ WEBHOOK_ENDPOINT_CONCURRENCY_MAX: '200' }).webhooks.endpointConcurrencyMax).to.equal(200);
  });

  it('parses every variable', () => {
    const c = loadConfig({
      PORT: '8080',
      HOST: '0.0.0.0',
      DATABASE_URL: 'postgres://u:p@db:5432/walgate',
      REDIS_URL: 'redis://cache:6379',
      SMTP_URL: 'smtp://user:pass@mail:587',
      PUBLIC_URL: 'https://auth.example.com/',
      KEY_ENCRYPTION_KEY: Buffer.alloc(32, 7).toString('base64'),
      WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
      WEBHOOK_RETRY_DELAYS_MS: '0, 10,20',
      WEBHOOK_BREAKER_FAILURES: '3',
      WEBHOOK_BREAKER_COOLDOWN_MS: '500',
      WEBHOOK_TIMEOUT_MS: '250',
      TAILER_PORT: '9001',
      LOG_LEVEL: 'warn',
    });
    expect(c.port).to.equal(8080);
    expect(c.publicUrl).to.equal('https://auth.example.com');
    expect(c.keyEncryptionKey).to.have.length(32);
    expect(c.webhooks.allowPrivateNetworks).to.equal(true);
    expect(c.webhooks.retryDelaysMs).to.deep.equal([0, 10, 20]);
    expect(c.webhooks.breakerFailures).to.equal(3);
    expect(c.tailerPort).to.equal(9001);
  });

  const bad: Array<[string, string]> = [
    ['PORT', 'eighty'],
    ['PORT', '70000'],
    ['DATABASE_URL', 'mysql://x'],
    ['REDIS_URL', 'not a url'],
    ['SMTP_URL', 'http://mail'],
    ['KEY_ENCRYPTION_KEY', 'c2hvcnQ='],
    ['WEBHOOK_ALLOW_PRIVATE_NETWORKS', 'maybe'],
    ['WEBHOOK_RETRY_DELAYS_MS', '0,-5'],
    ['WEBHOOK_BREAKER_FAILURES', '0'],
    ['WEBHOOK_TIMEOUT_MS', 'soon'],
    ['WEBHOOK_RETENTION_MS', '7d'],
    ['WEBHOOK_RETENTION_MS', '500'],
    ['WEBHOOK_DEAD_RETENTION_MS', '-1'],
    ['WEBHOOK_DEAD_RETENTION_MS', '1.5e3x'],
    ['LOG_LEVEL', 'loud'],
  ];
  for (const [name, value] of bad) {
    it(`names ${name} when it is ${JSON.stringify(value)}`, () => {
      expect(() => loadConfig({ [name]: value })).to.throw(ConfigError, name);
    });
  }

  it('keeps delivered history 7 days and dead letters 30 days unless told otherwise', () => {
    expect(loadConfig({}).retention).to.deep.equal({ deliveredMs: 7 * 86_400_000, deadMs: 30 * 86_400_000 });
    expect(loadConfig({ WEBHOOK_RETENTION_MS: '3600000', WEBHOOK_DEAD_RETENTION_MS: '1000' }).retention).to.deep.equal({
      deliveredMs: 3_600_000,
      deadMs: 1000,
    });
  });

  it('requires KEY_ENCRYPTION_KEY and DATABASE_URL in production', () => {
    expect(() => loadConfig({ NODE_ENV: 'production', DATABASE_URL: 'postgres://db/w' })).to.throw(ConfigError, 'KEY_ENCRYPTION_KEY');
    expect(() => loadConfig({ NODE_ENV: 'production', KEY_ENCRYPTION_KEY: Buffer.alloc(32).toString('base64') })).to.throw(
      ConfigError,
      'DATABASE_URL',
    );
  });

  it('treats an empty variable as unset', () => {
    expect(loadConfig({ PORT: '', REDIS_URL: '' }).port).to.equal(3000);
  });
});
