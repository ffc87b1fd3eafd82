import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { ENV_VARIABLES } from '../../src/core/config.js';
import type { Context } from '../../src/core/context.js';
import type { BusWorker } from '../../src/delivery/bus/worker.js';
import { registerWorkerGauges } from '../../src/ops/worker-ops.js';
import type { DeliveryEngine } from '../../src/delivery/engine.js';
import { Metrics } from '../../src/core/metrics.js';
import { registerTailerGauges } from '../../src/ops/tailer-ops.js';
import type { WalTailer } from '../../src/tailer/tailer.js';
import { registerProblemGauge } from '../../src/webhooks/problems-metric.js';

// The user documentation against the code and itself: every metric either daemon registers is in
// the Operations page's table with its labels (and nothing else is), every variable is in the
// Configuration page; the README stays short, every relative link resolves, every page opens
// with a table of contents, and none speaks of the project's own history.

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const read = (file: string) => readFileSync(path.join(ROOT, file), 'utf8');
const README = read('README.md');
const PAGES = readdirSync(path.join(ROOT, 'docs'))
  .filter((f) => f.endsWith('.md'))
  .map((f) => `docs/${f}`);
/** The pages this layout defines (others are added beside them). */
const TOPICS = ['authentication', 'graphql', 'webhooks', 'configuration', 'operations', 'security', 'architecture', 'benchmarks', 'cli', 'console'];

function section(text: string, title: string): string {
  const start = text.indexOf(`\n## ${title}\n`);
  expect(start, `## ${title}`).to.be.greaterThan(-1);
  const end = text.indexOf('\n## ', start + 1);
  return text.slice(start, end < 0 ? undefined : end);
}

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens. */
const anchorOf = (heading: string) =>
  heading
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\- _]/gu, '')
    .replaceAll(' ', '-');

function anchors(text: string): Set<string> {
  return new Set([...text.replace(/```[\s\S]*?```/g, '').matchAll(/^#{1,6} (.+)$/gm)].map((m) => anchorOf(m[1]!.trim())));
}

/** Relative links (and images) of a Markdown file, outside code blocks. */
function relativeLinks(text: string): string[] {
  const prose = text.replace(/```[\s\S]*?```/g, '').replace(/`[^`\n]*`/g, '');
  return [...prose.matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1]!).filter((href) => !/^[a-z][a-z0-9+.-]*:/i.test(href));
}

/** walgate's own metrics, as both daemons register them (nothing is scraped: no collect runs). */
function registeredMetrics(): Array<{ name: string; labelNames: string[] }> {
  const metrics = new Metrics({ defaultMetrics: false });
  const ctx = { metrics, pool: {}, config: {} } as unknown as Context;
  const tailer = { status: () => ({ slotName: 'walgate_x', role: 'leader' }) } as unknown as WalTailer;
  registerTailerGauges(ctx, tailer, { breakerStates: () => new Map() } as unknown as DeliveryEngine);
  registerProblemGauge(ctx); // the api's
  // A delivery worker's registry is its own (it shares the breaker gauge with the tailer's).
  const workerMetrics = new Metrics({ defaultMetrics: false });
  const worker = { partitions: [] } as unknown as BusWorker;
  registerWorkerGauges({ ...ctx, metrics: workerMetrics } as Context, worker, { breakerStates: () => new Map() } as unknown as DeliveryEngine);
  const all = new Map<string, string[]>();
  for (const m of [...metrics.registry.getMetricsAsArray(), ...workerMetrics.registry.getMetricsAsArray()]) {
    const named = m as unknown as { name: string; labelNames?: string[] };
    all.set(named.name, named.labelNames ?? []);
  }
  return [...all].map(([name, labelNames]) => ({ name, labelNames }));
}

describe('README and docs/', () => {
  it('docs/operations.md ## Metrics lists every walgate metric with its labels, and no other', () => {
    const operations = section(read('docs/operations.md'), 'Metrics');
    const metrics = registeredMetrics();
    for (const { name, labelNames } of metrics) {
      const row = operations.split('\n').find((line) => line.startsWith(`| \`${name}\` |`));
      expect(row, `a row for ${name}`).to.be.a('string');
      for (const label of labelNames) expect(row, `${name} names its label ${label}`).to.contain(`\`${label}\``);
    }
    const documented = new Set([...operations.matchAll(/^\| `(walgate_\w+)` \|/gm)].map((m) => m[1]));
    expect([...documented]).to.have.members(metrics.map((m) => m.name));
  });

  it('docs/configuration.md lists every variable of src/core/config.ts, in one table', () => {
    const table = section(read('docs/configuration.md'), 'Environment variables')
      .split('\n')
      .filter((line) => line.startsWith('| `'))
      .join('\n');
    for (const name of ENV_VARIABLES) expect(table, name).to.contain(`\`${name}\``);
  });

  it('README ## API documentation shows the committed screenshot', () => {
    const match = /!\[[^\]]*\]\(([^)]+\.png)\)/.exec(section(README, 'API documentation'));
    expect(match, 'an image').to.not.equal(null);
    expect(existsSync(path.join(ROOT, match![1]!)), match![1]).to.equal(true);
  });

  it('README.md is at most 350 lines and keeps the two commands', () => {
    expect(README.split('\n').length).to.be.at.most(350);
    expect(README).to.contain('npm ci && npm start');
    expect(README).to.contain('npm ci && npm test');
  });

  it('every relative link in README.md and docs/*.md resolves, anchors included', () => {
    const broken: string[] = [];
    for (const file of ['README.md', ...PAGES]) {
      for (const href of relativeLinks(read(file))) {
        const [target = '', anchor] = href.split('#');
        const resolved = target ? path.posix.join(path.posix.dirname(file), decodeURIComponent(target)) : file;
        if (!existsSync(path.join(ROOT, resolved))) broken.push(`${file}: ${href} (no ${resolved})`);
        else if (anchor && resolved.endsWith('.md') && !anchors(read(resolved)).has(anchor)) broken.push(`${file}: ${href} (no heading)`);
      }
    }
    expect(broken).to.deep.equal([]);
    expect(relativeLinks(README).filter((h) => h.startsWith('docs/')).length, 'the README links the pages').to.be.greaterThan(5);
  });

  it('each topic page exists, opens with a table of contents, and the README links it', () => {
    for (const topic of TOPICS) {
      const file = `docs/${topic}.md`;
      expect(existsSync(path.join(ROOT, file)), file).to.equal(true);
      const opening = read(file).split('\n## ')[0]!;
      expect(opening, `${file} lists its sections before the first`).to.match(/^- \[[^\]]+\]\(#[^)]+\)$/m);
      expect(README, `README links ${file}`).to.contain(`](${file})`);
    }
  });

  it('speaks of the product only: no development history or internal labels', () => {
    for (const file of ['README.md', ...PAGES]) {
      const text = read(file);
      for (const word of [/\bissue \d+/i, /\bthe seed\b/i, /\bseed's\b/i, /\bdesign card\b/i, /\bDESIGN\.md\b/])
        expect(text, `${file}: ${word}`).to.not.match(word);
    }
  });
});
