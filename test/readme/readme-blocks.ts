/** A shell block of the README, with the outputs it documents (`# -> ...` lines). */
export interface ReadmeBlock {
  /** 1-based line of the opening fence, for messages. */
  line: number;
  code: string;
  skip: string | undefined;
  expected: string[];
}

const SKIP = /<!--\s*readme-test:\s*skip\b\s*(.*?)\s*-->/;

/**
 * The ```sh blocks of a Markdown text, in order. A block right after a
 * `<!-- readme-test: skip (reason) -->` line is marked skipped. An expected output starts with
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
    const skip = previous >= 0 ? SKIP.exec(lines[previous]!)?.[1] : undefined;
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
