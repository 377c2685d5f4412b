import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import {
  countLines,
  decodeSource,
  detectMinified,
  isDeclarationFile,
  isSourceFileName,
  languageOf,
  loadSource,
  realFs,
  sha256Hex,
} from '../src/fileio';

describe('fileio', () => {
  it('maps every source extension to a language', () => {
    assert.equal(languageOf('a.ts'), 'typescript');
    assert.equal(languageOf('a.mts'), 'typescript');
    assert.equal(languageOf('a.cts'), 'typescript');
    assert.equal(languageOf('a.tsx'), 'tsx');
    assert.equal(languageOf('a.js'), 'javascript');
    assert.equal(languageOf('a.mjs'), 'javascript');
    assert.equal(languageOf('a.cjs'), 'javascript');
    assert.equal(languageOf('a.jsx'), 'jsx');
    assert.equal(languageOf('a.json'), undefined);
    assert.equal(languageOf('Makefile'), undefined);
  });

  it('leaves declaration files out of the sources', () => {
    for (const name of ['a.d.ts', 'a.d.mts', 'a.d.cts', 'styles.d.css.ts']) {
      assert.ok(isDeclarationFile(name), name);
      assert.ok(!isSourceFileName(name), name);
    }
    assert.ok(isSourceFileName('d.ts.ts'));
    assert.ok(isSourceFileName('build.ts'));
  });

  it('decodes UTF-8, strips a UTF-8 BOM, decodes UTF-16 with a BOM', () => {
    assert.deepEqual(decodeSource(Buffer.from('const é = 1;\n')), { ok: true, text: 'const é = 1;\n' });
    assert.deepEqual(decodeSource(Buffer.from('\ufeffconst a = 1;')), { ok: true, text: 'const a = 1;' });
    const utf16le = Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from('let x = "ü";', 'utf16le')]);
    assert.deepEqual(decodeSource(utf16le), { ok: true, text: 'let x = "ü";' });
    const utf16be = Buffer.from(Buffer.from('let y;', 'utf16le')).swap16();
    assert.deepEqual(decodeSource(Buffer.concat([Buffer.from([0xfe, 0xff]), utf16be])), { ok: true, text: 'let y;' });
  });

  it('refuses NUL bytes as binary and latin-1 as not UTF-8, saying where', () => {
    const binary = decodeSource(Buffer.from([0x63, 0x6f, 0x00, 0x01]));
    assert.deepEqual(binary, { ok: false, reason: 'binary', detail: 'NUL byte at offset 2' });
    const latin1 = decodeSource(Buffer.from('const caf\xe9 = 1;', 'latin1'));
    assert.deepEqual(latin1, { ok: false, reason: 'not_utf8', detail: 'invalid UTF-8 near byte 9' });
  });

  it('detects minified code by name and by line shape, not plain long files', () => {
    assert.equal(detectMinified('vendor/jquery.min.js', 'var a=1;')?.reason, 'minified');
    const bundle = '/*! license */\n' + 'var a=function(){return 1};'.repeat(2000);
    const skip = detectMinified('bundle.js', bundle);
    assert.equal(skip?.reason, 'minified');
    assert.match(skip.detail, /longest line \d+ chars/);
    const longFile = Array.from({ length: 50_000 }, (_, i) => `export const value${i} = ${i};`).join('\n');
    assert.equal(detectMinified('big.ts', longFile), undefined);
    const oneLongLiteral = 'export const a = 1;\n'.repeat(200) + `export const data = "${'x'.repeat(3000)}";\n`;
    assert.equal(detectMinified('data.ts', oneLongLiteral), undefined);
  });

  it('counts lines with and without a trailing newline', () => {
    assert.equal(countLines(''), 0);
    assert.equal(countLines('a'), 1);
    assert.equal(countLines('a\n'), 1);
    assert.equal(countLines('a\r\nb'), 2);
    assert.equal(countLines('a\n\nb\n'), 3);
  });

  it('loads a file once: hash of the bytes, text, too-large check before reading', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cc-fileio-'));
    try {
      const file = path.join(dir, 'a.ts');
      fs.writeFileSync(file, '\ufeffexport const a = 1;\n');
      const loaded = loadSource(file, fs.statSync(file).size, { maxFileBytes: 1024 });
      assert.ok(loaded.ok);
      assert.equal(loaded.text, 'export const a = 1;\n');
      assert.equal(loaded.contentHash, sha256Hex(fs.readFileSync(file)));
      assert.equal(loaded.lineCount, 1);
      let reads = 0;
      const counting = { ...realFs, readFile: (p: string) => (reads++, realFs.readFile(p)) };
      const big = loadSource(file, 5000, { maxFileBytes: 1024 }, counting);
      assert.deepEqual(big, { ok: false, contentHash: '', reason: 'too_large', detail: '5000 bytes exceeds limit of 1024' });
      assert.equal(reads, 0);
      const gone = loadSource(path.join(dir, 'gone.ts'), 10, { maxFileBytes: 1024 });
      assert.equal(!gone.ok && gone.reason, 'vanished');
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
