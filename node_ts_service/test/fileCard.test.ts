// The file card: what the module chunk's embedding text says about its file.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import ts from 'typescript';
import { commentPurpose, fileHeader } from '../src/fileCard';
import { byQualifiedName, chunkText } from './chunkHelpers';

function card(relativePath: string, text: string, language: 'typescript' | 'javascript' = 'typescript'): string {
  return byQualifiedName(chunkText(relativePath, text, language).chunks, '<module top level>').embeddingText;
}

function preamble(embeddingText: string): string[] {
  return embeddingText.slice(0, embeddingText.indexOf('\n---\n')).split('\n');
}

function parse(text: string): ts.SourceFile {
  return ts.createSourceFile('a.ts', text, ts.ScriptTarget.Latest, true);
}

describe('the file card', () => {
  it('states the header comment as the purpose, and lists the names the file exports', () => {
    const text = [
      '/**',
      ' * @fileoverview Schedules retries of failed jobs with exponential backoff. Used by the worker.',
      ' */',
      "import { Job } from './job';",
      '',
      'export class RetryScheduler {',
      '  next(job: Job): number {',
      '    return job.attempts * 2;',
      '  }',
      '}',
      '',
      'export function backoff(n: number): number {',
      '  return 2 ** n;',
      '}',
      '',
      'function internal(): void {',
      '  return;',
      '}',
      '',
    ].join('\n');
    assert.deepEqual(preamble(card('src/retry/scheduler.ts', text)), [
      '[TypeScript] src/retry/scheduler.ts > <module top level>',
      'Purpose: Schedules retries of failed jobs with exponential backoff.',
      'Signature: module src/retry/scheduler.ts',
      'Exports: RetryScheduler, backoff',
      'Dependencies: ./job',
      '',
    ]);
  });

  it('skips licence banners and directives, and a comment that documents the first declaration', () => {
    const licensed = '/*! Copyright 2020 Acme. MIT License. */\n// eslint-disable no-console\n\n// Parses CLI flags into options.\n\nexport const parse = (argv: string[]) => argv;\n';
    assert.equal(preamble(card('cli.ts', licensed))[1], 'Purpose: Parses CLI flags into options.');
    // Directly on the declaration: the declaration's own doc; the card falls back to its purpose.
    const attached = '/** Adds two numbers. */\nexport function add(a: number, b: number): number {\n  return a + b;\n}\n';
    const header = fileHeader(parse(attached));
    assert.equal(header?.attached, true);
    assert.equal(preamble(card('add.ts', attached))[1], 'Purpose: Adds two numbers.');
  });

  it('falls back to the first exported symbol with a doc comment, and says nothing when there is none', () => {
    const text = 'function helper() {\n  return 1;\n}\n\n/** Renders the toolbar. */\nexport function Toolbar() {\n  return helper();\n}\n';
    assert.equal(preamble(card('toolbar.ts', text))[1], 'Purpose: Renders the toolbar.');
    const bare = 'const a = 1;\nconsole.log(a);\n';
    assert.equal(preamble(card('bare.ts', bare))[1], 'Signature: module bare.ts');
  });

  it('knows CommonJS exports and barrel re-exports', () => {
    const cjs = "// Reads config files.\n'use strict';\nconst fs = require('fs');\n\nfunction load(p) {\n  return fs.readFileSync(p);\n}\n\nmodule.exports = load;\nexports.other = function other() {\n  return 2;\n};\n";
    const lines = preamble(card('lib/config.js', cjs, 'javascript'));
    assert.equal(lines[1], 'Purpose: Reads config files.');
    assert.ok(lines.includes('Exports: load, other'), lines.join('\n'));
    const named = 'function a() {\n  return 1;\n}\nconst b = 2;\nexport { a, b as c };\nexport default b;\n';
    assert.ok(preamble(card('named.ts', named)).includes('Exports: a, b'));
    const barrel = "export * from './a';\nexport { b } from './b';\nexport { c as d } from './c';\n";
    assert.ok(preamble(card('index.ts', barrel)).includes('Re-exports: ./a, ./b, ./c'));
  });

  it('reads the prose of // and block comments, keeping descriptive tags only', () => {
    assert.equal(commentPurpose('// Streams rows.\n// Second line.'), 'Streams rows.');
    assert.equal(commentPurpose('/**\n * @description Connection pool for the driver. Reuses sockets.\n * @module pool\n */'), 'Connection pool for the driver.');
    assert.equal(commentPurpose('/**\n * Caches compiled templates\n * @param x ignored\n */'), 'Caches compiled templates');
  });
});
