// `npm run build:console`: bundles console/src into dist/console (served by src/http/console.ts).
// Hashed file names, so the server can cache them for a year; index.html names them.
import * as esbuild from 'esbuild';
import fs from 'node:fs';
import path from 'node:path';

const root = path.resolve(import.meta.dirname, '..');
const out = path.join(root, 'dist/console');
fs.rmSync(out, { recursive: true, force: true });

const result = await esbuild.build({
  entryPoints: { app: path.join(root, 'console/src/main.tsx'), styles: path.join(root, 'console/src/styles.css') },
  bundle: true,
  minify: true,
  format: 'esm',
  target: 'es2022',
  jsx: 'automatic',
  jsxImportSource: 'preact',
  entryNames: '[name]-[hash]',
  loader: { '.css': 'css' },
  outdir: out,
  metafile: true,
  legalComments: 'none',
  logLevel: 'warning',
});

const outputs = Object.keys(result.metafile.outputs).map((file) => path.basename(file));
const script = outputs.find((name) => name.endsWith('.js'));
const style = outputs.find((name) => name.endsWith('.css'));
if (!script || !style) throw new Error(`console build produced ${outputs.join(', ')}`);
const html = fs
  .readFileSync(path.join(root, 'console/index.html'), 'utf8')
  .replace('%SCRIPT%', `/console/${script}`)
  .replace('%STYLE%', `/console/${style}`);
fs.writeFileSync(path.join(out, 'index.html'), html);
fs.copyFileSync(path.join(root, 'console/favicon.svg'), path.join(out, 'favicon.svg'));
const sizes = outputs.map((name) => `${name} ${fs.statSync(path.join(out, name)).size} B`).join(', ');
console.log(`console built into dist/console: ${sizes}`);
