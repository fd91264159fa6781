#!/usr/bin/env node
// Builds the console (console/src, Preact + uPlot) with esbuild into dist/console:
// index.html and assets/<name>-<hash>.{js,css}. The hashed names let the API serve the assets
// as immutable; index.html (served no-cache) names them. It has no inline script or style,
// because the console's CSP allows only 'self'. Run by `node scripts/setup.mjs --build` when
// console/ changed; on its own: `node scripts/build-console.mjs`.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as esbuild from 'esbuild';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const OUT = path.join(ROOT, 'dist', 'console');
const STAGING = path.join(ROOT, 'dist', `.console-${process.pid}`);
const ASSETS_URL = '/console/assets/';

export async function buildConsole() {
  fs.rmSync(STAGING, { recursive: true, force: true });
  try {
    const result = await esbuild.build({
      absWorkingDir: ROOT,
      entryPoints: { console: 'console/src/main.tsx' },
      bundle: true,
      format: 'esm',
      target: ['es2022'],
      platform: 'browser',
      minify: true,
      sourcemap: false,
      legalComments: 'none',
      jsx: 'automatic',
      jsxImportSource: 'preact',
      outdir: path.join(STAGING, 'assets'),
      entryNames: '[name]-[hash]',
      assetNames: '[name]-[hash]',
      publicPath: ASSETS_URL,
      metafile: true,
      logLevel: 'warning',
    });
    const outputs = Object.keys(result.metafile.outputs).map((file) => path.basename(file));
    const js = outputs.find((f) => f.endsWith('.js'));
    const css = outputs.find((f) => f.endsWith('.css'));
    if (!js || !css) throw new Error(`esbuild wrote no ${js ? 'CSS' : 'JS'} bundle (${outputs.join(', ')})`);
    const template = fs.readFileSync(path.join(ROOT, 'console', 'index.html'), 'utf8');
    const tags = `<link rel="stylesheet" href="${ASSETS_URL}${css}" />\n    <script type="module" src="${ASSETS_URL}${js}"></script>`;
    if (!template.includes('<!-- assets -->')) throw new Error('console/index.html has no <!-- assets --> marker');
    fs.writeFileSync(path.join(STAGING, 'index.html'), template.replace('<!-- assets -->', tags));
    // Swap the whole folder in at once: a running API never serves an index naming missing assets for long.
    fs.rmSync(OUT, { recursive: true, force: true });
    fs.renameSync(STAGING, OUT);
    return { js, css };
  } finally {
    fs.rmSync(STAGING, { recursive: true, force: true });
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  buildConsole().catch((err) => {
    process.stderr.write(`build-console: ${err?.message ?? err}\n`);
    process.exit(1);
  });
}
