import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { ESLint } from 'eslint';

// The layer rule (eslint.config.js) is what keeps imports pointing one way: core ← domains ←
// adapters ← main. These tests lint imports that point the wrong way and expect the build to fail,
// so a rule that silently stopped applying (a renamed folder, a broken resolver) fails here too.

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');

async function layerErrors(file: string, source: string): Promise<string[]> {
  const eslint = new ESLint({ cwd: ROOT });
  const [result] = await eslint.lintText(source, { filePath: path.join(ROOT, file) });
  return result!.messages.filter((m) => m.ruleId === 'boundaries/dependencies').map((m) => m.message);
}

describe('architecture: layers that point one way', function () {
  this.timeout(60_000);

  const wrongWay: [string, string, string][] = [
    [
      'the core importing a domain',
      'src/core/fixture.ts',
      "import { AuthService } from '../auth/service.js';\nexport const x = AuthService;\n",
    ],
    [
      'a domain importing the HTTP adapter',
      'src/auth/fixture.ts',
      "import { createApp } from '../http/app.js';\nexport const x = createApp;\n",
    ],
    [
      'projects importing auth (auth depends on projects)',
      'src/projects/fixture.ts',
      "import { provisionEnvironment } from '../auth/provision.js';\nexport const x = provisionEnvironment;\n",
    ],
    [
      'delivery importing the webhook service',
      'src/delivery/fixture.ts',
      "import { WebhookService } from '../webhooks/service.js';\nexport const x = WebhookService;\n",
    ],
    [
      'the webhook service reaching into the tailer past its capture interface',
      'src/webhooks/fixture.ts',
      "import { watchTable } from '../tailer/publication.js';\nexport const x = watchTable;\n",
    ],
    [
      'the HTTP adapter importing the assembly',
      'src/http/fixture.ts',
      "import { createApiApp } from '../main/api-app.js';\nexport const x = createApiApp;\n",
    ],
  ];
  for (const [what, file, source] of wrongWay) {
    it(`fails the lint: ${what}`, async () => {
      const errors = await layerErrors(file, source);
      expect(errors, `${file}: ${source}`).to.have.length(1);
      expect(errors[0]).to.match(/no policy allowing dependencies/);
    });
  }

  it('passes imports that point the right way', async () => {
    expect(
      await layerErrors(
        'src/webhooks/fixture.ts',
        "import { captureTable } from '../tailer/capture/index.js';\nimport { AppError } from '../core/errors.js';\nexport const x = [captureTable, AppError];\n",
      ),
    ).to.deep.equal([]);
    expect(
      await layerErrors('src/http/fixture.ts', "import { AuthService } from '../auth/service.js';\nexport const x = AuthService;\n"),
    ).to.deep.equal([]);
  });

  it('no folder of src/ imports a folder that imports it back (directly or around a cycle)', () => {
    const graph = folderGraph(path.join(ROOT, 'src'));
    const cycle = findCycle(graph);
    expect(cycle, cycle ? `folder cycle: ${cycle.join(' → ')}` : '').to.equal(undefined);
  });
});

describe('architecture: small files with one job', () => {
  it('no source file under src/ is over 400 lines', () => {
    const src = path.join(ROOT, 'src');
    const long = sourceFiles(src)
      .map((file) => [path.relative(ROOT, file), readFileSync(file, 'utf8').split('\n').length - 1] as const)
      .filter(([, lines]) => lines > 400);
    expect(long).to.deep.equal([]);
  });
});

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sourceFiles(path.join(dir, e.name)) : /\.c?ts$/.test(e.name) ? [path.join(dir, e.name)] : [],
  );
}

/** Folders of src/ (two levels under core/ and http/ count as their top folder) and whom they import. */
function folderGraph(src: string): Map<string, Set<string>> {
  const graph = new Map<string, Set<string>>();
  const top = (file: string) => path.relative(src, file).split(path.sep)[0]!;
  for (const file of sourceFiles(src)) {
    const from = top(file);
    for (const m of readFileSync(file, 'utf8').matchAll(/from\s+'(\.{1,2}\/[^']+)'/g)) {
      const to = top(path.resolve(path.dirname(file), m[1]!));
      if (to !== from && !to.startsWith('..')) (graph.get(from) ?? graph.set(from, new Set()).get(from)!).add(to);
    }
  }
  return graph;
}

function findCycle(graph: Map<string, Set<string>>): string[] | undefined {
  const state = new Map<string, 'open' | 'done'>();
  const stack: string[] = [];
  const visit = (node: string): string[] | undefined => {
    if (state.get(node) === 'done') return undefined;
    if (state.get(node) === 'open') return [...stack.slice(stack.indexOf(node)), node];
    state.set(node, 'open');
    stack.push(node);
    for (const next of graph.get(node) ?? []) {
      const cycle = visit(next);
      if (cycle) return cycle;
    }
    stack.pop();
    state.set(node, 'done');
    return undefined;
  };
  for (const node of graph.keys()) {
    const cycle = visit(node);
    if (cycle) return cycle;
  }
  return undefined;
}
