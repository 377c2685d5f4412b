#!/usr/bin/env node
// In-process syntactic chunking microbenchmark: no gRPC, no scan, no type checker.
// Requires the compiled chunker (node_ts_service/dist/src/chunker.js) directly and
// times parse (ts.createSourceFile) + chunkSourceFile over every source file of a
// folder, so the chunker's own speed can be told apart from transport overhead.
// Usage: node bench/chunk_bench_node.js [FOLDER=bench/.work/chunk-corpus] [--repeat N]
'use strict';

const fs = require('node:fs');
const path = require('node:path');

const repo = path.resolve(__dirname, '..');
const serviceDir = path.join(repo, 'node_ts_service');
const chunkerPath = path.join(serviceDir, 'dist', 'src', 'chunker.js');
if (!fs.existsSync(chunkerPath)) {
  process.stderr.write(`${chunkerPath} is missing: build the analysis service (npx tsc -p node_ts_service)\n`);
  process.exit(2);
}
const ts = require(require.resolve('typescript', { paths: [serviceDir] }));
const { chunkSourceFile, lineCoverage } = require(chunkerPath);

const LANGUAGE = { '.ts': 'typescript', '.mts': 'typescript', '.cts': 'typescript', '.tsx': 'tsx',
  '.js': 'javascript', '.mjs': 'javascript', '.cjs': 'javascript', '.jsx': 'jsx' };
const SCRIPT_KIND = { typescript: ts.ScriptKind.TS, tsx: ts.ScriptKind.TSX, javascript: ts.ScriptKind.JS,
  jsx: ts.ScriptKind.JSX };

function listFiles(root) {
  const out = [];
  const walk = (dir) => {
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) {
        if (entry.name !== 'node_modules') walk(full);
      } else if (LANGUAGE[path.extname(entry.name)] && !/\.d\.[cm]?ts$/.test(entry.name)) {
        out.push(full);
      }
    }
  };
  walk(root);
  return out.sort();
}

function pct(part, whole) {
  return whole ? `${((100 * part) / whole).toFixed(2)}%` : 'n/a';
}

function main() {
  const args = process.argv.slice(2);
  const repeatAt = args.indexOf('--repeat');
  const repeat = repeatAt >= 0 ? Number(args.splice(repeatAt, 2)[1]) : 1;
  const root = path.resolve(args[0] || path.join(repo, 'bench', '.work', 'chunk-corpus'));
  const inputs = listFiles(root).map((file) => ({
    absolutePath: file,
    relativePath: path.relative(root, file).split(path.sep).join('/'),
    text: fs.readFileSync(file, 'utf8').replace(/^\uFEFF/, ''),
    language: LANGUAGE[path.extname(file)],
  }));
  const lines = inputs.reduce((n, input) => n + input.text.split('\n').length, 0);
  const runs = [];
  let chunks = 0;
  const perFile = [];
  const coverage = { lines: 0, covered: 0, codeLines: 0, codeCovered: 0, codeCoveredBySymbols: 0, zeroChunkFiles: 0 };
  for (let r = 0; r < repeat; r++) {
    let parseMs = 0;
    let chunkMs = 0;
    chunks = 0;
    const cpu0 = process.cpuUsage();
    for (const input of inputs) {
      const t0 = process.hrtime.bigint();
      const sourceFile = ts.createSourceFile(input.absolutePath, input.text, ts.ScriptTarget.Latest, true,
        SCRIPT_KIND[input.language]);
      const t1 = process.hrtime.bigint();
      const out = chunkSourceFile({ ...input, sourceFile, workspaceRoot: root });
      const t2 = process.hrtime.bigint();
      parseMs += Number(t1 - t0) / 1e6;
      chunkMs += Number(t2 - t1) / 1e6;
      chunks += out.chunks.length;
      if (r === repeat - 1) {
        perFile.push([Number(t2 - t0) / 1e6, input.relativePath, out.chunks.length]);
        // Outside the timed section: the metric is not part of chunking.
        const cov = lineCoverage(input.text, out.chunks);
        for (const key of Object.keys(cov)) coverage[key] += cov[key];
        if (out.chunks.length === 0 && cov.lines > 0) coverage.zeroChunkFiles++;
      }
    }
    const cpu = process.cpuUsage(cpu0);
    runs.push({ parseMs, chunkMs, cpuS: (cpu.user + cpu.system) / 1e6 });
  }
  const best = runs.reduce((a, b) => (a.parseMs + a.chunkMs <= b.parseMs + b.chunkMs ? a : b));
  const totalS = (best.parseMs + best.chunkMs) / 1000;
  perFile.sort((a, b) => b[0] - a[0]);
  const rows = [
    ['Folder', path.relative(repo, root) || root],
    ['Files / lines / chunks', `${inputs.length.toLocaleString('en')} / ${lines.toLocaleString('en')} / ${chunks.toLocaleString('en')}`],
    ['Runs (best reported)', String(repeat)],
    ['Parse (ts.createSourceFile)', `${(best.parseMs / 1000).toFixed(2)} s`],
    ['chunkSourceFile (collapse, ids, tokens, embedding text)', `${(best.chunkMs / 1000).toFixed(2)} s`],
    ['**Syntactic lines/s, in process** (target ≥ 50,000)', `**${Math.round(lines / totalS).toLocaleString('en')}**`],
    // Other processes share the 2 cores; CPU time shows what the chunker itself cost.
    ['CPU time (user+sys) of the best run', `${best.cpuS.toFixed(2)} s = ${Math.round(lines / best.cpuS).toLocaleString('en')} lines per CPU-second`],
    ['Slowest file', `${perFile[0][1]}: ${perFile[0][0].toFixed(0)} ms, ${perFile[0][2]} chunks`],
    ['Line coverage (non-blank lines inside a chunk) / code lines / code lines in a symbol chunk',
      `${pct(coverage.covered, coverage.lines)} / ${pct(coverage.codeCovered, coverage.codeLines)} / ${pct(coverage.codeCoveredBySymbols, coverage.codeLines)}`],
    ['Files with zero chunks', String(coverage.zeroChunkFiles)],
    ['Peak RSS of this process', `${Math.round(process.resourceUsage().maxRSS / 1024).toLocaleString('en')} MiB`],
  ];
  process.stdout.write('| Measure | Value |\n|---|---|\n');
  for (const [k, v] of rows) process.stdout.write(`| ${k} | ${v} |\n`);
}

main();
