import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import * as convert from '../src/convert';
import * as pb from '../src/gen/codecompass/v1/analysis';
import type { Chunk, ChunkedFile, NodeKind, RenderedSymbol, ScanResult, SkipReason } from '../src/types';

const NODE_KINDS: NodeKind[] = [
  'function', 'method', 'class', 'interface', 'type', 'enum', 'component', 'variable', 'namespace', 'constructor', 'accessor',
];
const SKIP_REASONS: SkipReason[] = [
  'minified', 'binary', 'not_utf8', 'too_large', 'unreadable', 'vanished', 'outside_workspace', 'symlink_loop', 'ignored',
  'nested_repository', 'declaration_file', 'excluded', 'chunk_failed', 'duplicate',
];

function sampleChunk(nodeKind: NodeKind): Chunk {
  return {
    id: `id-${nodeKind}`,
    snippetHash: 'abc123',
    relativePath: 'src/a.ts',
    language: 'tsx',
    nodeKind,
    name: 'validate',
    qualifiedName: 'TokenService.validate',
    parentId: 'parent',
    childIds: ['c1', 'c2'],
    depth: 1,
    signature: 'validate(token: string): boolean',
    fullSource: 'validate(token: string): boolean {\n  return true;\n}',
    collapsedSource: 'validate(token: string): boolean { /* 1 line collapsed */ }',
    startLine: 10,
    endLine: 12,
    jsdoc: '/** Checks. */',
    jsdocStartLine: 9,
    relevantImports: ["import { x } from './x';"],
    isTest: false,
    embeddingText: '[TypeScript] src/a.ts > TokenService > validate',
    references: [{ name: 'x', signature: 'const x: number', relativePath: 'src/x.ts', chunkId: 'xid' }],
    embeddingTokenCount: 42,
    indent: '  ',
  };
}

/** Encodes and decodes through the wire format, as a real call does. */
function overWire<T>(fns: pb.MessageFns<T>, message: T): T {
  return fns.decode(fns.encode(message).finish());
}

describe('convert', () => {
  it('round-trips every node kind of a chunk through the wire', () => {
    for (const kind of NODE_KINDS) {
      const file: ChunkedFile = {
        relativePath: 'src/a.ts',
        status: 'ok',
        skipDetail: '',
        diagnostics: [],
        chunks: [sampleChunk(kind)],
        contentHash: 'h',
        lineCount: 12,
        mtimeNs: 1_700_000_000_123_456_000,
        sizeBytes: 300,
      };
      const back = convert.chunkedFileFromPb(overWire(pb.ChunkFilesResponse, convert.chunkedFileToPb(file)));
      assert.deepEqual(back, file);
    }
  });

  it('round-trips every skip reason and status', () => {
    for (const reason of SKIP_REASONS) {
      const file: ChunkedFile = {
        relativePath: 'big.js',
        status: 'skipped',
        skipReason: reason,
        skipDetail: 'because',
        diagnostics: [],
        chunks: [],
        contentHash: '',
        lineCount: 0,
        mtimeNs: 0,
        sizeBytes: 0,
      };
      assert.deepEqual(convert.chunkedFileFromPb(overWire(pb.ChunkFilesResponse, convert.chunkedFileToPb(file))), file);
    }
    const withErrors: ChunkedFile = {
      relativePath: 'bad.ts',
      status: 'syntax_errors',
      skipDetail: '',
      diagnostics: ['1:5 Identifier expected.'],
      chunks: [],
      contentHash: 'h',
      lineCount: 1,
      mtimeNs: 5,
      sizeBytes: 9,
    };
    assert.deepEqual(convert.chunkedFileFromPb(overWire(pb.ChunkFilesResponse, convert.chunkedFileToPb(withErrors))), withErrors);
  });

  it('round-trips a scan result, keeping nanosecond mtimes of today', () => {
    const result: ScanResult = {
      files: [
        { relativePath: 'a.ts', sizeBytes: 10, mtimeNs: Date.now() * 1e6, contentHash: 'x', language: 'typescript' },
        { relativePath: 'b.jsx', sizeBytes: 0, mtimeNs: 1, contentHash: 'y', language: 'jsx' },
      ],
      added: ['a.ts'],
      changed: ['b.jsx'],
      removed: ['c.js'],
      skipped: SKIP_REASONS.map((reason) => ({ relativePath: `${reason}.js`, reason, detail: reason })),
      durationMs: 12.5,
      watchToken: 'a1b2.7.1700000000000.k',
      unchanged: false,
      previousNeeded: false,
      sinceToken: true,
    };
    assert.deepEqual(convert.scanResultFromPb(overWire(pb.ScanWorkspaceResponse, convert.scanResultToPb(result))), result);
    const unchanged: ScanResult = { files: [], added: [], changed: [], removed: [], skipped: [], durationMs: 0, watchToken: 't', unchanged: true, previousNeeded: false, sinceToken: false };
    assert.deepEqual(convert.scanResultFromPb(overWire(pb.ScanWorkspaceResponse, convert.scanResultToPb(unchanged))), unchanged);
    const needed: ScanResult = { files: [], added: [], changed: [], removed: [], skipped: [], durationMs: 0, watchToken: '', unchanged: false, previousNeeded: true, sinceToken: false };
    assert.deepEqual(convert.scanResultFromPb(overWire(pb.ScanWorkspaceResponse, convert.scanResultToPb(needed))), needed);
  });

  it('round-trips requests', () => {
    const scan = {
      workspaceRoot: '/ws',
      previous: [{ relativePath: 'a.ts', sizeBytes: 3, mtimeNs: Date.now() * 1e6, contentHash: 'h', language: 'typescript' as const }],
      excludePatterns: ['gen/'],
      unchangedSince: 'a1b2.7.1700000000000.k',
      previousOmitted: false,
    };
    assert.deepEqual(convert.scanRequestFromPb(overWire(pb.ScanWorkspaceRequest, convert.scanRequestToPb(scan))), scan);
    const light = { ...scan, previous: [], previousOmitted: true };
    assert.deepEqual(convert.scanRequestFromPb(overWire(pb.ScanWorkspaceRequest, convert.scanRequestToPb(light))), light);
    const chunk = { workspaceRoot: '/ws', paths: ['src', 'a.ts'], includeReferences: true, lexicalOnly: false };
    assert.deepEqual(convert.chunkRequestFromPb(overWire(pb.ChunkFilesRequest, convert.chunkRequestToPb(chunk))), chunk);
    const render = { workspaceRoot: '/ws', specs: [{ symbolId: 's', expandChildIds: ['c'], relativePath: 'a.ts', focusLine: 7 }] };
    assert.deepEqual(convert.renderRequestFromPb(overWire(pb.RenderSymbolsRequest, convert.renderRequestToPb(render))), render);
  });

  it('round-trips a render result', () => {
    const symbol: RenderedSymbol = {
      symbolId: 's',
      relativePath: 'a.ts',
      qualifiedName: 'A.b',
      source: 'b() {}',
      tokenCount: 3,
      startLine: 2,
      endLine: 4,
      unknownChildIds: ['zzz'],
      windowStartLine: 3,
      windowEndLine: 3,
    };
    const result = { symbols: [symbol], missingSymbolIds: ['gone'] };
    assert.deepEqual(convert.renderResultFromPb(overWire(pb.RenderSymbolsResponse, convert.renderResultToPb(result))), result);
  });

  it('takes the language of an old catalog entry from its extension', () => {
    const entry = convert.fileEntryFromPb({ ...pb.FileEntry.create(), relativePath: 'x/y.mjs', contentHash: 'h' });
    assert.equal(entry.language, 'javascript');
  });

  it('refuses unknown enum values with a conversion error', () => {
    assert.throws(
      () => convert.chunkedFileFromPb({ ...convert.chunkedFileToPb({
        relativePath: 'a', status: 'ok', skipDetail: '', diagnostics: [], chunks: [], contentHash: '', lineCount: 0, mtimeNs: 0, sizeBytes: 0,
      }), status: 99 as pb.FileStatus }),
      convert.ConversionError,
    );
  });
});
