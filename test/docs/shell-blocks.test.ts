import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';

// Every shell block of the README and docs/*.md (```sh, ```bash, ```shell) is what a newcomer
// pastes into whatever shell they have — dash, zsh on macOS, bash. So each must be POSIX: it parses
// under `sh -n` (dash here), and it uses none of the bash-only forms that dash parses without a
// word but runs differently (`"${H[@]}"` is a "Bad substitution" only when it runs, `cmd &> f`
// runs cmd in the background). The README's walkthrough also runs under `sh` (walkthrough.test.ts).

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const FILES = ['README.md', ...readdirSync(path.join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];
const SHELL_LANGUAGES = new Set(['sh', 'bash', 'shell']);

interface ShellBlock {
  where: string; // file:line of the opening fence
  language: string;
  text: string;
}

function shellBlocks(file: string, markdown: string): ShellBlock[] {
  const blocks: ShellBlock[] = [];
  for (const m of markdown.matchAll(/^( *)```(\w*)[^\n]*\n([\s\S]*?)^\1```/gm)) {
    if (!SHELL_LANGUAGES.has(m[2]!)) continue;
    blocks.push({ where: `${file}:${markdown.slice(0, m.index).split('\n').length}`, language: m[2]!, text: m[3]! });
  }
  return blocks;
}

/**
 * The block as the shell reads it, without what is not commands: here-document bodies (a
 * receiver's JavaScript), single-quoted strings and comments. `literal` also drops double-quoted
 * strings, where braces, brackets and `&>` are text (JSON bodies) — but expansions are not, so
 * those are looked for in `code`.
 */
function syntaxOf(text: string): { code: string; literal: string } {
  const lines: string[] = [];
  let heredoc: string | undefined;
  for (const line of text.split('\n')) {
    if (heredoc !== undefined) {
      if (line.replace(/^\t+/, '') === heredoc) heredoc = undefined;
      continue;
    }
    heredoc = /<<-?\s*['"]?(\w+)['"]?/.exec(line)?.[1];
    lines.push(line);
  }
  const code = lines
    .join('\n')
    .replace(/'[^']*'/g, "''")
    .replace(/(^|\s)#.*$/gm, '$1');
  return { code, literal: code.replace(/"(?:\\.|[^"\\])*"/g, '""') };
}

/** Forms dash accepts under `sh -n` that are bash (or zsh) only when they run. */
const BASH_ONLY: Array<[RegExp, 'code' | 'literal', string]> = [
  [/\$\{#?\w+\[/, 'code', 'an array expansion (${name[@]}); use a function: api() { curl -H … "$@"; }'],
  [/\$\{\w+(:-?\d|\/|\^|,)/, 'code', 'a bash parameter expansion (substring, replace or case)'],
  [/\$'/, 'code', "$'…' (ANSI-C quoting)"],
  [/(^|[\s;&|(])\w+\+?=\(/m, 'literal', 'an array assignment name=(…)'],
  [/\[\[/, 'literal', '[[ … ]]; use [ … ]'],
  [/&>/, 'literal', '&> (dash runs the command in the background); use > file 2>&1'],
  [/(^|[;&|]\s*)function\s+\w+/m, 'literal', 'the function keyword; use name() { …; }'],
  [/(^|[;&|]\s*)(source|declare|typeset|shopt|pushd|popd|let)\s/m, 'literal', 'a bash builtin (source, declare, typeset, shopt, pushd, popd, let)'],
  [/\becho\s+-e\b/, 'literal', 'echo -e; use printf'],
  [/\{[^\s{}'"]*,[^\s{}'"]*\}/, 'literal', 'brace expansion {a,b}'],
  [/<\(|>\(/, 'literal', 'process substitution'],
];

function bashOnlyForms(text: string): string[] {
  const syntax = syntaxOf(text);
  return BASH_ONLY.filter(([pattern, view]) => pattern.test(syntax[view])).map(([, , what]) => what);
}

describe('README and docs/: shell blocks are POSIX sh', () => {
  const blocks = FILES.flatMap((file) => shellBlocks(file, readFileSync(path.join(ROOT, file), 'utf8')));

  it('finds the shell blocks of the pages a newcomer follows', () => {
    const files = new Set(blocks.map((b) => b.where.split(':')[0]));
    for (const page of ['README.md', 'docs/webhooks.md', 'docs/mfa.md', 'docs/admin-api.md', 'docs/authentication.md'])
      expect([...files], page).to.include(page);
  });

  it('every block parses under sh -n (dash)', () => {
    const failures = blocks.flatMap((b) => {
      const parsed = spawnSync('sh', ['-n'], { input: b.text, encoding: 'utf8' });
      return parsed.status === 0 ? [] : [`${b.where}: ${parsed.stderr.trim()}`];
    });
    expect(failures).to.deep.equal([]);
  });

  it('no block uses a bash-only form that sh -n lets through', () => {
    const failures = blocks.flatMap((b) => bashOnlyForms(b.text).map((what) => `${b.where}: ${what}`));
    expect(failures).to.deep.equal([]);
  });

  it('the checks catch what they are for (a block as the docs had it, and forms dash parses)', () => {
    const before = `H=(-H 'X-Project-Id: demo')\ncurl -s $B/auth/signup "\${H[@]}" -d '{"a":1,"b":2}'\n`;
    expect(spawnSync('sh', ['-n'], { input: before }).status, 'dash refuses the array').to.not.equal(0);
    expect(spawnSync('sh', ['-n'], { input: 'curl "${H[@]}"\n' }).status, 'but parses its use').to.equal(0);
    expect(bashOnlyForms('curl "${H[@]}"\n')).to.have.length(1);
    expect(bashOnlyForms('node x.mjs &> log\n')).to.have.length(1);
    expect(bashOnlyForms('mkdir -p a/{b,c}\n')).to.have.length(1);
    // …and not what is fine: JSON bodies, here-document bodies, comments, functions.
    const fine = `api() { curl -s -H 'A: b' "$@"; }\napi -d '{"a":1,"b":[2,3]}'  # {x,y} [[ ]]\ncat > r.mjs <<'EOF'\nconst a = [[1, 2]]; source(x);\nEOF\n`;
    expect(bashOnlyForms(fine)).to.deep.equal([]);
    expect(spawnSync('sh', ['-n'], { input: fine }).status).to.equal(0);
  });
});
