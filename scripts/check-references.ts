import fs from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

/**
 * `npm run lint:references`: every reference the code and docs make must resolve inside this
 * repository, so a clone alone explains the code. It fails on
 * - a rule cited by a name docs/rules.md does not define (citations read rule `name`, or
 *   rules `a`, `b` and `c`);
 * - a bare requirement id (R18, A10, G6, ...) or a `§` section mark that names no public standard
 *   (RFC 9110 §15 and JSON-RPC 2.0 §5 are fine): they pointed into documents a clone does not have;
 * - a path outside the repository, an issue number (the tracker is not in a clone), or a repository
 *   path (src/..., docs/...) that does not exist.
 * In src/ and the Markdown docs the whole text is read; elsewhere only comments, since tests hold
 * strings such as 'C1' as data.
 */
const root = path.resolve(import.meta.dirname, '..');
const RULES_FILE = 'docs/rules.md';

/** Where references are checked: the whole text (`text`) or only the comments of code (`comments`). */
const SCOPES: { dir: string; read: 'text' | 'comments'; paths: boolean }[] = [
  { dir: 'src', read: 'text', paths: true },
  { dir: 'docs', read: 'text', paths: true },
  { dir: 'test', read: 'comments', paths: false },
  { dir: 'bench', read: 'comments', paths: false },
  { dir: 'scripts', read: 'comments', paths: false },
  { dir: 'console/src', read: 'comments', paths: false },
  { dir: 'packages/web/src', read: 'comments', paths: false },
  { dir: 'packages/client/src', read: 'comments', paths: false },
];
/** Files outside those folders; a package's README cites paths inside its package, so those are not resolved. */
const ROOT_FILES = [
  { file: 'README.md', paths: true },
  { file: 'eslint.config.js', paths: true },
  { file: 'packages/web/README.md', paths: false },
  { file: 'packages/client/README.md', paths: false },
];
const CODE = /\.(?:ts|tsx|js|mjs)$/;
const SKIP = new Set(['node_modules', 'dist', 'console']);
/** Not read: the generated client types (their text comes from src/) and this file, whose examples would match. */
const NOT_READ = new Set(['packages/client/src/schema.d.ts', 'scripts/check-references.ts']);

/** rule `a`; rules `a`, `b` and `c`; also across the line breaks of a comment. */
const CITATION = /\brules?[\s*/]+((?:`[^`\n]+`(?:[\s,*/]*(?:and[\s*/]+)?(?=`))?)+)/g;
const RULE_NAME = /^[a-z0-9-]+$/;
/** The id schemes of the documents the code once cited: G1, R18, C4, A10, S3, B5. */
const REQUIREMENT_ID = /(?<![\w./#-])[GRCASB]\d{1,2}(?![\w/-])/g;
const SECTION_MARK = /§/g;
const PUBLIC_STANDARD_BEFORE_MARK = /(?:RFC \d+|JSON-RPC 2\.0) $/;
const OUTSIDE =
  /\b[Ii]ssues? #?\d+|\.\.\/shared|\/work\/|shared\/(?:spec|reference)|service-spec\.md|code-style-anchors|engagement-anchors|perf-reliability-anchors|a2a-protocol-notes|campaign-policies|trust-and-providers/g;
const REPO_PATH =
  /(?<![\w./@-])(?:src|docs|test|bench|scripts|console|packages|deploy|examples|bin)\/[\w.-]+(?:\/[\w.-]+)*(?:\.(?:ts|tsx|md|js|json|yaml|yml|sql|sh))?/g;

function walk(dir: string, out: string[]): string[] {
  const full = path.join(root, dir);
  if (!fs.existsSync(full)) return out;
  for (const entry of fs.readdirSync(full, { withFileTypes: true })) {
    const rel = path.posix.join(dir, entry.name);
    if (entry.isDirectory()) {
      if (!SKIP.has(entry.name) || rel === 'console/src') walk(rel, out);
    } else if (CODE.test(entry.name) || entry.name.endsWith('.md')) out.push(rel);
  }
  return out;
}

/** The comments of a TypeScript or JavaScript file, each with the line it starts on. */
function comments(file: string, text: string): { text: string; line: number }[] {
  const kind = file.endsWith('.tsx') ? ts.ScriptKind.TSX : ts.ScriptKind.TS;
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, false, kind);
  const seen = new Set<number>();
  const found: { text: string; line: number }[] = [];
  const collect = (ranges: ts.CommentRange[] | undefined) => {
    for (const r of ranges ?? []) {
      if (seen.has(r.pos)) continue;
      seen.add(r.pos);
      found.push({ text: text.slice(r.pos, r.end), line: source.getLineAndCharacterOfPosition(r.pos).line + 1 });
    }
  };
  const visit = (node: ts.Node) => {
    collect(ts.getLeadingCommentRanges(text, node.getFullStart()));
    collect(ts.getTrailingCommentRanges(text, node.getEnd()));
    node.forEachChild(visit);
  };
  visit(source);
  collect(ts.getLeadingCommentRanges(text, source.endOfFileToken.getFullStart()));
  return found;
}

function ruleNames(): Set<string> {
  const text = fs.readFileSync(path.join(root, RULES_FILE), 'utf8');
  return new Set([...text.matchAll(/^### ([a-z0-9-]+)\s*$/gm)].map((m) => m[1] ?? ''));
}

/** Each problem with the offset in `piece` it was found at. */
function problemsIn(piece: string, rules: Set<string>, checkPaths: boolean): { at: number; problem: string }[] {
  const problems: { at: number; problem: string }[] = [];
  const add = (at: number, problem: string) => problems.push({ at, problem });
  for (const m of piece.matchAll(CITATION)) {
    for (const name of (m[1] ?? '').match(/`[^`]+`/g) ?? []) {
      const bare = name.slice(1, -1);
      if (RULE_NAME.test(bare) && !rules.has(bare))
        add(m.index, `cites rule ${name}, which ${RULES_FILE} does not define`);
    }
  }
  for (const m of piece.matchAll(REQUIREMENT_ID)) {
    add(m.index, `bare requirement id ${m[0]}: cite a rule of ${RULES_FILE} by name, or say it in plain words`);
  }
  for (const m of piece.matchAll(SECTION_MARK)) {
    if (!PUBLIC_STANDARD_BEFORE_MARK.test(piece.slice(Math.max(0, m.index - 20), m.index))) {
      add(m.index, 'a § section of a document not named as a public standard (RFC n §x, JSON-RPC 2.0 §x)');
    }
  }
  for (const m of piece.matchAll(OUTSIDE)) add(m.index, `points outside the repository: ${m[0]}`);
  if (checkPaths) {
    for (const m of piece.matchAll(REPO_PATH)) {
      const cited = m[0].replace(/\.$/, '');
      if (!fs.existsSync(path.join(root, cited))) add(m.index, `cites ${cited}, which is not in the repository`);
    }
  }
  return problems;
}

const rules = ruleNames();
const failures: string[] = [];
const files = [
  ...SCOPES.flatMap((scope) => walk(scope.dir, []).map((file) => ({ file, ...scope }))),
  ...ROOT_FILES.map(({ file, paths }) => ({ file, read: file.endsWith('.md') ? 'text' : 'comments', paths })),
];
for (const { file, read, paths } of files) {
  if (NOT_READ.has(file) || !fs.existsSync(path.join(root, file))) continue;
  const text = fs.readFileSync(path.join(root, file), 'utf8');
  const pieces = read === 'comments' && CODE.test(file) ? comments(file, text) : [{ text, line: 1 }];
  for (const piece of pieces) {
    for (const { at, problem } of problemsIn(piece.text, rules, paths)) {
      const line = piece.line + (piece.text.slice(0, at).match(/\n/g)?.length ?? 0);
      failures.push(`${file}:${line}: ${problem}`);
    }
  }
}
if (failures.length > 0) {
  process.stderr.write(`${failures.join('\n')}\n\n${failures.length} reference(s) that a clone cannot follow.\n`);
  process.exitCode = 1;
} else {
  process.stdout.write(`References: ${files.length} files, every rule cited is in ${RULES_FILE}.\n`);
}
