/**
 * The Dockerfile and .dockerignore read as the engine reads them, for the tests that check the
 * image without an engine (test/unit/compose.test.ts, test/e2e/image-build.test.ts).
 */

export interface Instruction {
  op: string;
  args: string;
}
export interface Stage {
  name?: string;
  from: string;
  instructions: Instruction[];
}

export function parseDockerfile(text: string): Stage[] {
  const logical: string[] = [];
  let pending = '';
  for (const line of text.split('\n')) {
    if (/^\s*#/.test(line) && pending === '') continue;
    if (/^\s*#/.test(line)) continue; // comment inside a continuation
    const trimmed = line.replace(/\s+$/, '');
    if (trimmed.endsWith('\\')) {
      pending += `${trimmed.slice(0, -1)} `;
      continue;
    }
    const full = (pending + trimmed).trim();
    pending = '';
    if (full) logical.push(full);
  }
  const stages: Stage[] = [];
  for (const line of logical) {
    const m = /^(\w+)\s+(.*)$/s.exec(line);
    if (!m) continue;
    const op = (m[1] as string).toUpperCase();
    const args = (m[2] as string).replace(/\s+/g, ' ').trim();
    if (op === 'FROM') {
      const from = /^(?:--\S+\s+)*(\S+)(?:\s+AS\s+(\S+))?/i.exec(args);
      stages.push({ from: from?.[1] ?? args, name: from?.[2], instructions: [] });
    } else stages.at(-1)?.instructions.push({ op, args });
  }
  return stages;
}

/** The patterns of a .dockerignore file, in order. */
export function dockerignorePatterns(text: string): string[] {
  return text
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'));
}

/** Whether the engine leaves `file` (a path relative to the context, with /) out of the context. */
export function dockerignoreMatches(patterns: string[], file: string): boolean {
  let ignored = false;
  for (const raw of patterns) {
    const negate = raw.startsWith('!');
    const pattern = (negate ? raw.slice(1) : raw).replace(/^\/+|\/+$/g, '');
    const regex = new RegExp(
      `^${pattern
        .split('**')
        .map((part) =>
          part
            .replace(/[.+^${}()|[\]\\]/g, '\\$&')
            .replace(/\*/g, '[^/]*')
            .replace(/\?/g, '[^/]'),
        )
        .join('.*')}(/.*)?$`,
    );
    if (regex.test(file)) ignored = !negate;
  }
  return ignored;
}
