// A small Dockerfile reader for tests: instructions grouped by stage, continuation lines joined,
// comments dropped, exec-form (JSON) and shell-form arguments both split into words.

export interface Instruction {
  keyword: string;
  /** The text after the keyword. */
  args: string;
}

export interface Stage {
  base: string;
  name: string | undefined;
  instructions: Instruction[];
}

export function parseDockerfile(text: string): Stage[] {
  const logical: string[] = [];
  let pending = '';
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (!pending && (line === '' || line.startsWith('#'))) continue;
    if (line.endsWith('\\')) {
      pending += `${line.slice(0, -1)} `;
      continue;
    }
    logical.push(pending + line);
    pending = '';
  }
  const stages: Stage[] = [];
  for (const line of logical) {
    const [, keyword = '', args = ''] = /^(\S+)\s*(.*)$/.exec(line) ?? [];
    const instruction = { keyword: keyword.toUpperCase(), args };
    if (instruction.keyword === 'FROM') {
      const [base = '', as, name] = args.split(/\s+/);
      stages.push({ base, name: as?.toUpperCase() === 'AS' ? name : undefined, instructions: [] });
    } else {
      const stage = stages[stages.length - 1];
      if (!stage) throw new Error(`${keyword} before FROM`);
      stage.instructions.push(instruction);
    }
  }
  return stages;
}

/** The words of a command: `["node", "x.js"]` (exec form) or `node x.js` (shell form). */
export function commandWords(args: string): string[] {
  const trimmed = args.trim();
  if (trimmed.startsWith('[')) return JSON.parse(trimmed) as string[];
  return trimmed.split(/\s+/).filter(Boolean);
}

/** `ENV A=1 B=2` → { A: '1', B: '2' } (the forms this project uses). */
export function envAssignments(args: string): Record<string, string> {
  return Object.fromEntries(
    args
      .split(/\s+/)
      .filter(Boolean)
      .map((pair) => pair.split('=') as [string, string]),
  );
}
