import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { ENV_VARIABLES } from '../../src/core/config.js';
import type { Context } from '../../src/core/context.js';
import type { DeliveryEngine } from '../../src/delivery/engine.js';
import { Metrics } from '../../src/core/metrics.js';
import { registerTailerGauges } from '../../src/ops/tailer-ops.js';
import type { WalTailer } from '../../src/tailer/tailer.js';

// The README's reference parts against the code: every metric either daemon registers is in the
// Operations table with its labels (and nothing else is), and every variable is in the
// configuration table.

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const README = readFileSync(path.join(ROOT, 'README.md'), 'utf8');

function section(title: string): string {
  const start = README.indexOf(`\n## ${title}\n`);
  expect(start, `README has ## ${title}`).to.be.greaterThan(-1);
  const end = README.indexOf('\n## ', start + 1);
  return README.slice(start, end < 0 ? undefined : end);
}

/** walgate's own metrics, as both daemons register them (nothing is scraped: no collect runs). */
function registeredMetrics(): Array<{ name: string; labelNames: string[] }> {
  const metrics = new Metrics({ defaultMetrics: false });
  const ctx = { metrics, pool: {}, config: {} } as unknown as Context;
  const tailer = { status: () => ({ slotName: 'walgate_x', role: 'leader' }) } as unknown as WalTailer;
  registerTailerGauges(ctx, tailer, { breakerStates: () => new Map() } as unknown as DeliveryEngine);
  return metrics.registry.getMetricsAsArray().map((m) => {
    const named = m as unknown as { name: string; labelNames?: string[] };
    return { name: named.name, labelNames: named.labelNames ?? [] };
  });
}

describe('README', () => {
  it('## Operations lists every walgate metric with its labels, and no other', () => {
    const operations = section('Operations');
    const metrics = registeredMetrics();
    for (const { name, labelNames } of metrics) {
      const row = operations.split('\n').find((line) => line.startsWith(`| \`${name}\` |`));
      expect(row, `a row for ${name}`).to.be.a('string');
      for (const label of labelNames) expect(row, `${name} names its label ${label}`).to.contain(`\`${label}\``);
    }
    const documented = new Set([...operations.matchAll(/^\| `(walgate_\w+)` \|/gm)].map((m) => m[1]));
    expect([...documented]).to.have.members(metrics.map((m) => m.name));
  });

  it('## Configuration lists every variable of src/config.ts', () => {
    const configuration = section('Configuration');
    for (const name of ENV_VARIABLES) expect(configuration, name).to.contain(`\`${name}\``);
  });

  it('## API documentation shows the committed screenshot', () => {
    const match = /!\[[^\]]*\]\(([^)]+\.png)\)/.exec(section('API documentation'));
    expect(match, 'an image').to.not.equal(null);
    expect(existsSync(path.join(ROOT, match![1]!)), match![1]).to.equal(true);
  });
});
