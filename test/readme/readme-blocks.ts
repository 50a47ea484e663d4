/** A shell block of the README, with the outputs it documents (`# -> ...` lines). */
export interface ReadmeBlock {
  /** 1-based line of the opening fence, for messages. */
  line: number;
  code: string;
  skip: string | undefined;
  expected: string[];
}

/** The visible note that keeps a block out of the walkthrough, and says why, to the reader and the test alike. */
const SKIP = /^>\s*Not part of the walkthrough:\s*(.*?)\s*$/;

/**
 * The ```sh blocks of a Markdown text, in order. A block right after a line
 * `> Not part of the walkthrough: <reason>` is marked skipped. An expected output starts with
 * `# -> ` and continues on the following comment lines indented by more than one space.
 */
export function readmeBlocks(markdown: string): ReadmeBlock[] {
  const lines = markdown.split('\n');
  const blocks: ReadmeBlock[] = [];
  for (let i = 0; i < lines.length; i++) {
    if (lines[i]!.trim() !== '```sh') continue;
    const start = i;
    const body: string[] = [];
    for (i++; i < lines.length && lines[i]!.trim() !== '```'; i++) body.push(lines[i]!);
    let previous = start - 1;
    while (previous >= 0 && lines[previous]!.trim() === '') previous--;
    // The note may run over several `>` lines: read it from its first.
    const note: string[] = [];
    while (previous >= 0 && lines[previous]!.startsWith('>')) note.unshift(lines[previous--]!.replace(/^>\s*/, ''));
    const skip = SKIP.exec(`> ${note.join(' ')}`)?.[1];
    const expected: string[] = [];
    for (let j = 0; j < body.length; j++) {
      const match = /^\s*# -> (.*)$/.exec(body[j]!);
      if (!match) continue;
      let text = match[1]!.trim();
      while (j + 1 < body.length && /^\s*#\s{2,}\S/.test(body[j + 1]!)) text += body[++j]!.replace(/^\s*#\s+/, '');
      expected.push(text);
    }
    blocks.push({
      line: start + 1,
      code: body.join('\n'),
      skip: skip === undefined ? undefined : skip || 'no reason given',
      expected,
    });
  }
  return blocks;
}

/** A documented output as a pattern: literal text where `...` stands for anything on the line. */
export function expectedPattern(expected: string): RegExp {
  const parts = expected.split('...').map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'));
  return new RegExp(parts.join('[^\\n]*?'));
}

/**
 * A documented JSON output, with `...` for what the reader need not see: `"..."` any string, `"ab..."`
 * a string starting `ab` (`...` anywhere in a string stands for any text), `...` as a value any value,
 * `...` among an object's members other members, `...` among an array's items other items. Without
 * `...`, an object has exactly the members shown (in any order) and an array exactly the items shown.
 */
export type JsonPattern =
  | { kind: 'any' }
  | { kind: 'literal'; value: string | number | boolean | null }
  | { kind: 'string'; parts: string[] }
  | { kind: 'object'; members: [string, JsonPattern][]; open: boolean }
  | { kind: 'array'; items: JsonPattern[]; open: boolean };

/** Parses a documented output as a JSON pattern; undefined when it is not one (plain text). */
export function parseJsonPattern(text: string): JsonPattern | undefined {
  let i = 0;
  const fail = (what: string): never => {
    throw new Error(`${what} at ${i} of ${text}`);
  };
  const space = () => {
    while (i < text.length && /\s/.test(text[i]!)) i++;
  };
  const ellipsis = (): boolean => {
    space();
    if (!text.startsWith('...', i)) return false;
    i += 3;
    return true;
  };
  const string = (): string => {
    let end = i + 1;
    while (end < text.length && text[end] !== '"') end += text[end] === '\\' ? 2 : 1;
    if (end >= text.length) fail('unterminated string');
    const raw = text.slice(i, end + 1);
    i = end + 1;
    return JSON.parse(raw) as string;
  };
  const value = (): JsonPattern => {
    space();
    if (ellipsis()) return { kind: 'any' };
    const c = text[i];
    if (c === '{') {
      i++;
      const members: [string, JsonPattern][] = [];
      let open = false;
      for (;;) {
        space();
        if (text[i] === '}') return (i++, { kind: 'object', members, open });
        if (text[i] === ',') i++;
        else if (ellipsis()) open = true;
        else if (text[i] === '"') {
          const key = string();
          space();
          if (text[i] !== ':') fail('":" expected');
          i++;
          members.push([key, value()]);
        } else fail('member expected');
      }
    }
    if (c === '[') {
      i++;
      const items: JsonPattern[] = [];
      let open = false;
      for (;;) {
        space();
        if (text[i] === ']') return (i++, { kind: 'array', items, open });
        if (text[i] === ',') i++;
        else if (ellipsis()) open = true;
        else items.push(value());
      }
    }
    if (c === '"') {
      const s = string();
      return s.includes('...') ? { kind: 'string', parts: s.split('...') } : { kind: 'literal', value: s };
    }
    const literal = /^(-?\d+(\.\d+)?([eE][+-]?\d+)?|true|false|null)/.exec(text.slice(i));
    if (!literal) fail('value expected');
    i += literal![0].length;
    return { kind: 'literal', value: JSON.parse(literal![0]) as number | boolean | null };
  };
  if (!/^[[{]/.test(text.trim())) return undefined;
  const pattern = value();
  space();
  if (i !== text.length) fail('text after the JSON');
  return pattern;
}

/** Why `actual` does not have the documented shape (a path and a reason), or undefined when it does. */
export function jsonMismatch(pattern: JsonPattern, actual: unknown, at = '$'): string | undefined {
  switch (pattern.kind) {
    case 'any':
      return undefined;
    case 'literal':
      return Object.is(actual, pattern.value)
        ? undefined
        : `${at}: ${JSON.stringify(actual)}, documented ${JSON.stringify(pattern.value)}`;
    case 'string': {
      if (typeof actual !== 'string') return `${at}: ${JSON.stringify(actual)}, documented a string`;
      const [first = '', ...rest] = pattern.parts;
      const last = rest.pop() ?? '';
      let from = first.length;
      let ok = actual.startsWith(first) && actual.length - last.length >= from && actual.endsWith(last);
      for (const part of rest) {
        const found = actual.indexOf(part, from);
        if (found === -1 || found + part.length > actual.length - last.length) ok = false;
        else from = found + part.length;
      }
      return ok ? undefined : `${at}: ${JSON.stringify(actual)}, documented "${pattern.parts.join('...')}"`;
    }
    case 'object': {
      if (actual === null || typeof actual !== 'object' || Array.isArray(actual))
        return `${at}: ${JSON.stringify(actual)}, documented an object`;
      const object = actual as Record<string, unknown>;
      for (const [key, member] of pattern.members) {
        if (!Object.hasOwn(object, key)) return `${at}.${key}: missing`;
        const inner = jsonMismatch(member, object[key], `${at}.${key}`);
        if (inner) return inner;
      }
      const documented = new Set(pattern.members.map(([key]) => key));
      const extra = Object.keys(object).filter((key) => !documented.has(key));
      return pattern.open || extra.length === 0
        ? undefined
        : `${at}: undocumented ${extra.join(', ')} (add ... if meant)`;
    }
    case 'array': {
      if (!Array.isArray(actual)) return `${at}: ${JSON.stringify(actual)}, documented an array`;
      if (!pattern.open && actual.length !== pattern.items.length)
        return `${at}: ${actual.length} items, documented ${pattern.items.length}`;
      // Documented items match actual ones in order (with others between them when `...` is shown).
      let next = 0;
      for (const [n, item] of pattern.items.entries()) {
        let reason: string | undefined = `${at}[${n}]: no item matches`;
        while (next < actual.length && reason !== undefined) {
          reason = jsonMismatch(item, actual[next], `${at}[${next}]`);
          next++;
          if (!pattern.open && reason !== undefined) return reason;
        }
        if (reason !== undefined) return reason;
      }
      return undefined;
    }
  }
}

/**
 * The JSON objects and arrays in a terminal's output, in order, with where each ends: curl prints an
 * answer without a final newline, so the next command's output may follow on the same line.
 */
export function jsonValuesIn(text: string): { value: unknown; end: number }[] {
  const values: { value: unknown; end: number }[] = [];
  let start = -1;
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (inString) {
      if (c === '\\') i++;
      else if (c === '"') inString = false;
    } else if (c === '"' && depth > 0) inString = true;
    else if (c === '{' || c === '[') {
      if (depth === 0) start = i;
      depth++;
    } else if ((c === '}' || c === ']') && depth > 0) {
      depth--;
      if (depth === 0) {
        try {
          values.push({ value: JSON.parse(text.slice(start, i + 1)) as unknown, end: i + 1 });
        } catch {
          // brackets in plain text, not JSON
        }
      }
    } else if (c === '\n' && depth > 0 && !/[\s}\]]/.test(text[i + 1] ?? '')) {
      // A bracket of plain text left open at the end of its line (JSON printed over several lines
      // goes on indented, or closes): start over.
      depth = 0;
    }
  }
  return values;
}
