import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { renderSymbol } from '../src/render';
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
});
