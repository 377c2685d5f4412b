import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { dedent, renderSymbol } from '../src/render';
import { countTokens } from '../src/tokens';
import { byQualifiedName, chunkText, readFixture } from './chunkHelpers';

const SAMPLE = readFixture('sample.ts');
const { chunks } = chunkText('src/auth/sample.ts', SAMPLE);
const id = (qualifiedName: string): string => byQualifiedName(chunks, qualifiedName).id;

describe('renderSymbol', () => {
  it('renders a symbol with all body-bearing children collapsed by default', () => {
    const cls = byQualifiedName(chunks, 'TokenService');
    const out = renderSymbol(chunks, SAMPLE, { symbolId: cls.id, expandChildIds: [] });
    assert.ok(out);
    assert.equal(out.source, cls.collapsedSource);
    assert.equal(out.tokenCount, countTokens(out.source));
    assert.equal(out.qualifiedName, 'TokenService');
    assert.equal(out.relativePath, 'src/auth/sample.ts');
    assert.deepEqual([out.startLine, out.endLine], [cls.startLine, cls.endLine]);
    assert.deepEqual(out.unknownChildIds, []);
  });

  it('expands the chosen children inline and keeps the rest collapsed', () => {
    const out = renderSymbol(chunks, SAMPLE, { symbolId: id('TokenService'), expandChildIds: [id('TokenService.validateToken')] });
    assert.ok(out);
    assert.ok(out.source.includes('      return jwt.verify(token, this.secret) as JwtPayload;\n'));
    assert.ok(out.source.includes('function decodeHeader(raw: string): string { /* 6 lines collapsed */ }'));
    assert.ok(out.source.includes('constructor(@Inject(\'SECRET\') secret: string) { /* 4 lines collapsed */ }'));
    assert.ok(out.source.includes('set value(v: number) { /* 3 lines collapsed */ }'));
    assert.ok(out.tokenCount > renderSymbol(chunks, SAMPLE, { symbolId: id('TokenService'), expandChildIds: [] })!.tokenCount);
  });

  it('expanding a grandchild expands the way to it', () => {
    const helper = id('TokenService.validateToken.decodeHeader.helper');
    const out = renderSymbol(chunks, SAMPLE, { symbolId: id('TokenService'), expandChildIds: [helper] });
    assert.ok(out);
    assert.ok(out.source.includes('        return s.trim();\n'));
    assert.ok(out.source.includes('      return helper(raw.split(\'.\')[0]);\n'));
    assert.ok(out.source.includes('parse(input: string | number): number { /* 5 lines collapsed */ }'));
  });

  it('reports ids that are not descendants and refuses unknown symbols', () => {
    const out = renderSymbol(chunks, SAMPLE, {
      symbolId: id('TokenService.validateToken'),
      expandChildIds: [id('api.get'), 'no-such-id', id('TokenService.validateToken.decodeHeader')],
    });
    assert.ok(out);
    assert.deepEqual(out.unknownChildIds, [id('api.get'), 'no-such-id']);
    assert.equal(renderSymbol(chunks, SAMPLE, { symbolId: 'missing', expandChildIds: [] }), undefined);
  });

  it('dedents a nested symbol so it reads like the file', () => {
    const out = renderSymbol(chunks, SAMPLE, { symbolId: id('TokenService.validateToken'), expandChildIds: [] });
    assert.ok(out);
    const lines = out.source.split('\n');
    assert.equal(lines[0], 'async validateToken(token: string): Promise<JwtPayload | null> {');
    assert.equal(lines[1], '  function decodeHeader(raw: string): string { /* 6 lines collapsed */ }');
    assert.equal(lines[lines.length - 1], '}');
    const crlf = SAMPLE.replace(/\n/g, '\r\n');
    const crlfChunks = chunkText('src/auth/sample.ts', crlf).chunks;
    const crlfOut = renderSymbol(crlfChunks, crlf, { symbolId: id('TokenService.validateToken'), expandChildIds: [] });
    assert.equal(crlfOut?.source, out.source.replace(/\n/g, '\r\n'));
  });

  it('renders every chunk with no child expanded as its collapsedSource without its indent', () => {
    // Selection answers from the index with exactly this rule when the file is as indexed, so
    // an answer is the same text whether or not the analysis service rendered it.
    const crlf = SAMPLE.replace(/\n/g, '\r\n');
    for (const text of [SAMPLE, crlf]) {
      const all = chunkText('src/auth/sample.ts', text).chunks;
      assert.ok(all.some((c) => c.indent !== ''));
      for (const chunk of all) {
        const out = renderSymbol(all, text, { symbolId: chunk.id, expandChildIds: [] });
        assert.ok(out, chunk.qualifiedName);
        assert.equal(out.source, dedent(chunk.collapsedSource, chunk.indent), chunk.qualifiedName);
        assert.deepEqual([out.startLine, out.endLine], [chunk.startLine, chunk.endLine]);
      }
    }
  });

  describe('around a focus line', () => {
    // A 100,000-line function of generated steps, inside a class so that it is indented.
    const STEPS = 100_000;
    const text = [
      'export class Pipeline {',
      '  /** Runs every generated step. */',
      '  run(input: number): number {',
      '    let total = input;',
      ...Array.from({ length: STEPS }, (_, i) => `    total = step${i}(total);`),
      '    return total;',
      '  }',
      '}',
      '',
    ].join('\n');
    const huge = chunkText('src/pipeline.ts', text);
    const run = byQualifiedName(huge.chunks, 'Pipeline.run');
    const lineOf = (needle: string) => text.split('\n').findIndex((l) => l.includes(needle)) + 1;

    it('shows the lines around the focus line with the symbol\'s first and last lines, and says which lines were left out', () => {
      const focus = lineOf('total = step61234(total);');
      const out = renderSymbol(huge.chunks, text, { symbolId: run.id, expandChildIds: [], focusLine: focus });
      assert.ok(out);
      assert.deepEqual([out.startLine, out.endLine, out.windowStartLine, out.windowEndLine], [run.startLine, run.endLine, focus - 40, focus + 40]);
      const lines = out.source.split('\n');
      assert.equal(lines.length, 1 + 1 + 81 + 1 + 1);
      assert.equal(lines[0], 'run(input: number): number {');
      assert.equal(lines[1], `  /* … lines ${run.startLine + 1}-${focus - 41} not shown (${focus - 41 - run.startLine} lines) */`);
      assert.equal(lines[2 + 40], '  total = step61234(total);');
      assert.equal(lines[lines.length - 2], `  /* … lines ${focus + 41}-${run.endLine - 1} not shown (${run.endLine - 1 - focus - 40} lines) */`);
      assert.equal(lines[lines.length - 1], '}');
      assert.equal(out.tokenCount, countTokens(out.source));
    });

    it('near the top the window starts right after the first line; without a focus line the whole symbol is shown', () => {
      const out = renderSymbol(huge.chunks, text, { symbolId: run.id, expandChildIds: [], focusLine: run.startLine + 3 });
      assert.ok(out);
      assert.equal(out.windowStartLine, run.startLine + 1);
      assert.equal(out.source.split('\n')[1], '  let total = input;');
      const whole = renderSymbol(huge.chunks, text, { symbolId: run.id, expandChildIds: [] });
      assert.ok(whole);
      assert.deepEqual([whole.windowStartLine, whole.windowEndLine], [0, 0]);
      assert.equal(whole.source.split('\n').length, run.endLine - run.startLine + 1);
    });

    it('a symbol short enough to show whole ignores the focus line', () => {
      const short = byQualifiedName(chunks, 'TokenService.validateToken');
      const out = renderSymbol(chunks, SAMPLE, { symbolId: short.id, expandChildIds: [], focusLine: short.startLine + 2 });
      assert.ok(out);
      assert.deepEqual([out.windowStartLine, out.windowEndLine], [0, 0]);
      assert.equal(out.source, renderSymbol(chunks, SAMPLE, { symbolId: short.id, expandChildIds: [] })!.source);
    });
  });
});
