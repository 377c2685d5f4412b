// The only module that knows both the generated proto types and the domain
// types. Handlers convert at the edge; nothing else imports src/gen.
import * as pb from './gen/codecompass/v1/analysis';
import * as chunkPb from './gen/codecompass/v1/chunk';
import { CHUNKER_VERSION } from './chunker';
import { languageOf } from './fileio';
import type { ChunkRequest, RenderRequest, RenderResult, ScanRequest } from './service';
import type { TraceDirection, TracePartialReason, TraceRequest, TraceResolution, TraceResult } from './trace';
import type {
  Chunk,
  ChunkedFile,
  FileEntry,
  FileStatus,
  Language,
  NodeKind,
  RenderedSymbol,
  ScanResult,
  SkipReason,
  SkippedFile,
  SymbolReference,
} from './types';

function invert<K extends string, V extends number>(table: Record<K, V>): Map<V, K> {
  return new Map(Object.entries(table).map(([k, v]) => [v as V, k as K]));
}

const LANGUAGE_TO_PB: Record<Language, chunkPb.Language> = {
  typescript: chunkPb.Language.LANGUAGE_TYPESCRIPT,
  tsx: chunkPb.Language.LANGUAGE_TSX,
  javascript: chunkPb.Language.LANGUAGE_JAVASCRIPT,
  jsx: chunkPb.Language.LANGUAGE_JSX,
};
const LANGUAGE_FROM_PB = invert(LANGUAGE_TO_PB);

const NODE_KIND_TO_PB: Record<NodeKind, chunkPb.NodeKind> = {
  function: chunkPb.NodeKind.NODE_KIND_FUNCTION,
  method: chunkPb.NodeKind.NODE_KIND_METHOD,
  class: chunkPb.NodeKind.NODE_KIND_CLASS,
  interface: chunkPb.NodeKind.NODE_KIND_INTERFACE,
  type: chunkPb.NodeKind.NODE_KIND_TYPE,
  enum: chunkPb.NodeKind.NODE_KIND_ENUM,
  component: chunkPb.NodeKind.NODE_KIND_COMPONENT,
  variable: chunkPb.NodeKind.NODE_KIND_VARIABLE,
  namespace: chunkPb.NodeKind.NODE_KIND_NAMESPACE,
  constructor: chunkPb.NodeKind.NODE_KIND_CONSTRUCTOR,
  accessor: chunkPb.NodeKind.NODE_KIND_ACCESSOR,
  module: chunkPb.NodeKind.NODE_KIND_MODULE,
};
const NODE_KIND_FROM_PB = invert(NODE_KIND_TO_PB);

const SKIP_REASON_TO_PB: Record<SkipReason, pb.SkipReason> = {
  minified: pb.SkipReason.SKIP_REASON_MINIFIED,
  binary: pb.SkipReason.SKIP_REASON_BINARY,
  not_utf8: pb.SkipReason.SKIP_REASON_NOT_UTF8,
  too_large: pb.SkipReason.SKIP_REASON_TOO_LARGE,
  unreadable: pb.SkipReason.SKIP_REASON_UNREADABLE,
  vanished: pb.SkipReason.SKIP_REASON_VANISHED,
  outside_workspace: pb.SkipReason.SKIP_REASON_OUTSIDE_WORKSPACE,
  symlink_loop: pb.SkipReason.SKIP_REASON_SYMLINK_LOOP,
  ignored: pb.SkipReason.SKIP_REASON_IGNORED,
  nested_repository: pb.SkipReason.SKIP_REASON_NESTED_REPOSITORY,
  declaration_file: pb.SkipReason.SKIP_REASON_DECLARATION_FILE,
  excluded: pb.SkipReason.SKIP_REASON_EXCLUDED,
  chunk_failed: pb.SkipReason.SKIP_REASON_CHUNK_FAILED,
  duplicate: pb.SkipReason.SKIP_REASON_DUPLICATE,
  generated: pb.SkipReason.SKIP_REASON_GENERATED,
};
const SKIP_REASON_FROM_PB = invert(SKIP_REASON_TO_PB);

const FILE_STATUS_TO_PB: Record<FileStatus, pb.FileStatus> = {
  ok: pb.FileStatus.FILE_STATUS_OK,
  syntax_errors: pb.FileStatus.FILE_STATUS_SYNTAX_ERRORS,
  skipped: pb.FileStatus.FILE_STATUS_SKIPPED,
};
const FILE_STATUS_FROM_PB = invert(FILE_STATUS_TO_PB);

export class ConversionError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConversionError';
  }
}

function fromTable<V, K>(table: Map<V, K>, value: V, what: string): K {
  const mapped = table.get(value);
  if (mapped === undefined) throw new ConversionError(`unknown ${what} value ${String(value)}`);
  return mapped;
}

/**
 * 64-bit fields are bigints on the wire (ts-proto forceLong=bigint) because
 * nanosecond mtimes exceed 2^53; the domain keeps JS numbers, which round
 * them to ~256 ns. Both sides of a catalog comparison round the same way.
 */
function int64ToPb(value: number): bigint {
  return BigInt(Math.trunc(value));
}

function int64FromPb(value: bigint): number {
  return Number(value);
}

export function languageToPb(language: Language): chunkPb.Language {
  return LANGUAGE_TO_PB[language];
}

export function languageFromPb(language: chunkPb.Language): Language {
  return fromTable(LANGUAGE_FROM_PB, language, 'Language');
}

export function fileEntryToPb(entry: FileEntry): pb.FileEntry {
  return {
    relativePath: entry.relativePath,
    sizeBytes: int64ToPb(entry.sizeBytes),
    mtimeNs: int64ToPb(entry.mtimeNs),
    contentHash: entry.contentHash,
    language: languageToPb(entry.language),
  };
}

export function fileEntryFromPb(entry: pb.FileEntry): FileEntry {
  // A catalog written by an older client may lack the language; the extension decides it.
  const language =
    entry.language === chunkPb.Language.LANGUAGE_UNSPECIFIED
      ? (languageOf(entry.relativePath) ?? 'typescript')
      : languageFromPb(entry.language);
  return {
    relativePath: entry.relativePath,
    sizeBytes: int64FromPb(entry.sizeBytes),
    mtimeNs: int64FromPb(entry.mtimeNs),
    contentHash: entry.contentHash,
    language,
  };
}

export function skippedFileToPb(skipped: SkippedFile): pb.SkippedFile {
  return {
    relativePath: skipped.relativePath,
    reason: SKIP_REASON_TO_PB[skipped.reason],
    detail: skipped.detail,
    folder: skipped.folder ?? false,
  };
}

export function skippedFileFromPb(skipped: pb.SkippedFile): SkippedFile {
  return {
    relativePath: skipped.relativePath,
    reason: fromTable(SKIP_REASON_FROM_PB, skipped.reason, 'SkipReason'),
    detail: skipped.detail,
    ...(skipped.folder ? { folder: true } : {}),
  };
}

export function scanRequestFromPb(request: pb.ScanWorkspaceRequest): ScanRequest {
  return {
    workspaceRoot: request.workspaceRoot,
    previous: request.previous.map(fileEntryFromPb),
    excludePatterns: [...request.excludePatterns],
    unchangedSince: request.unchangedSince,
    previousOmitted: request.previousOmitted,
  };
}

export function scanRequestToPb(request: ScanRequest): pb.ScanWorkspaceRequest {
  return {
    workspaceRoot: request.workspaceRoot,
    previous: request.previous.map(fileEntryToPb),
    excludePatterns: request.excludePatterns,
    unchangedSince: request.unchangedSince ?? '',
    previousOmitted: request.previousOmitted ?? false,
  };
}

export function scanResultToPb(result: ScanResult): pb.ScanWorkspaceResponse {
  return {
    files: result.files.map(fileEntryToPb),
    added: result.added,
    changed: result.changed,
    removed: result.removed,
    skipped: result.skipped.map(skippedFileToPb),
    durationMs: result.durationMs,
    chunkerVersion: CHUNKER_VERSION,
    watchToken: result.watchToken ?? '',
    unchanged: result.unchanged ?? false,
    previousNeeded: result.previousNeeded ?? false,
    sinceToken: result.sinceToken ?? false,
  };
}

export function scanResultFromPb(response: pb.ScanWorkspaceResponse): ScanResult {
  return {
    files: response.files.map(fileEntryFromPb),
    added: [...response.added],
    changed: [...response.changed],
    removed: [...response.removed],
    skipped: response.skipped.map(skippedFileFromPb),
    durationMs: response.durationMs,
    watchToken: response.watchToken,
    unchanged: response.unchanged,
    previousNeeded: response.previousNeeded,
    sinceToken: response.sinceToken,
  };
}

export function chunkRequestFromPb(request: pb.ChunkFilesRequest): ChunkRequest {
  return {
    workspaceRoot: request.workspaceRoot,
    paths: [...request.paths],
    includeReferences: request.includeReferences,
    lexicalOnly: request.lexicalOnly,
  };
}

export function chunkRequestToPb(request: ChunkRequest): pb.ChunkFilesRequest {
  return {
    workspaceRoot: request.workspaceRoot,
    paths: request.paths,
    includeReferences: request.includeReferences,
    lexicalOnly: request.lexicalOnly,
  };
}

function referenceToPb(ref: SymbolReference): chunkPb.SymbolReference {
  return { name: ref.name, signature: ref.signature, relativePath: ref.relativePath, chunkId: ref.chunkId };
}

export function chunkToPb(chunk: Chunk): chunkPb.Chunk {
  return {
    id: chunk.id,
    snippetHash: chunk.snippetHash,
    relativePath: chunk.relativePath,
    language: languageToPb(chunk.language),
    nodeKind: NODE_KIND_TO_PB[chunk.nodeKind],
    name: chunk.name,
    qualifiedName: chunk.qualifiedName,
    parentId: chunk.parentId,
    childIds: chunk.childIds,
    depth: chunk.depth,
    signature: chunk.signature,
    fullSource: chunk.fullSource,
    collapsedSource: chunk.collapsedSource,
    startLine: chunk.startLine,
    endLine: chunk.endLine,
    jsdoc: chunk.jsdoc,
    jsdocStartLine: chunk.jsdocStartLine,
    relevantImports: chunk.relevantImports,
    isTest: chunk.isTest,
    embeddingText: chunk.embeddingText,
    references: chunk.references.map(referenceToPb),
    embeddingTokenCount: chunk.embeddingTokenCount,
    indent: chunk.indent,
  };
}

export function chunkFromPb(chunk: chunkPb.Chunk): Chunk {
  return {
    id: chunk.id,
    snippetHash: chunk.snippetHash,
    relativePath: chunk.relativePath,
    language: languageFromPb(chunk.language),
    nodeKind: fromTable(NODE_KIND_FROM_PB, chunk.nodeKind, 'NodeKind'),
    name: chunk.name,
    qualifiedName: chunk.qualifiedName,
    parentId: chunk.parentId,
    childIds: [...chunk.childIds],
    depth: chunk.depth,
    signature: chunk.signature,
    fullSource: chunk.fullSource,
    collapsedSource: chunk.collapsedSource,
    startLine: chunk.startLine,
    endLine: chunk.endLine,
    jsdoc: chunk.jsdoc,
    jsdocStartLine: chunk.jsdocStartLine,
    relevantImports: [...chunk.relevantImports],
    isTest: chunk.isTest,
    embeddingText: chunk.embeddingText,
    references: chunk.references.map((r) => ({ ...r })),
    embeddingTokenCount: chunk.embeddingTokenCount,
    indent: chunk.indent,
  };
}

export function chunkedFileToPb(file: ChunkedFile): pb.ChunkFilesResponse {
  return {
    relativePath: file.relativePath,
    status: FILE_STATUS_TO_PB[file.status],
    skipReason: file.skipReason ? SKIP_REASON_TO_PB[file.skipReason] : pb.SkipReason.SKIP_REASON_UNSPECIFIED,
    diagnostics: file.diagnostics,
    chunks: file.chunks.map(chunkToPb),
    contentHash: file.contentHash,
    lineCount: file.lineCount,
    mtimeNs: int64ToPb(file.mtimeNs),
    sizeBytes: int64ToPb(file.sizeBytes),
    skipDetail: file.skipDetail,
    chunkerVersion: CHUNKER_VERSION,
  };
}

export function chunkedFileFromPb(response: pb.ChunkFilesResponse): ChunkedFile {
  const file: ChunkedFile = {
    relativePath: response.relativePath,
    status: fromTable(FILE_STATUS_FROM_PB, response.status, 'FileStatus'),
    skipDetail: response.skipDetail,
    diagnostics: [...response.diagnostics],
    chunks: response.chunks.map(chunkFromPb),
    contentHash: response.contentHash,
    lineCount: response.lineCount,
    mtimeNs: int64FromPb(response.mtimeNs),
    sizeBytes: int64FromPb(response.sizeBytes),
  };
  if (response.skipReason !== pb.SkipReason.SKIP_REASON_UNSPECIFIED) {
    file.skipReason = fromTable(SKIP_REASON_FROM_PB, response.skipReason, 'SkipReason');
  }
  return file;
}

export function renderRequestFromPb(request: pb.RenderSymbolsRequest): RenderRequest {
  return {
    workspaceRoot: request.workspaceRoot,
    specs: request.specs.map((spec) => ({
      symbolId: spec.symbolId,
      expandChildIds: [...spec.expandChildIds],
      relativePath: spec.relativePath,
      focusLine: spec.focusLine,
    })),
  };
}

export function renderRequestToPb(request: RenderRequest): pb.RenderSymbolsRequest {
  return {
    workspaceRoot: request.workspaceRoot,
    specs: request.specs.map((spec) => ({
      symbolId: spec.symbolId,
      expandChildIds: spec.expandChildIds,
      relativePath: spec.relativePath,
      focusLine: spec.focusLine ?? 0,
    })),
  };
}

export function renderedSymbolToPb(symbol: RenderedSymbol): pb.RenderedSymbol {
  return { ...symbol, unknownChildIds: symbol.unknownChildIds };
}

export function renderedSymbolFromPb(symbol: pb.RenderedSymbol): RenderedSymbol {
  return { ...symbol, unknownChildIds: [...symbol.unknownChildIds] };
}

export function renderResultToPb(result: RenderResult): pb.RenderSymbolsResponse {
  return { symbols: result.symbols.map(renderedSymbolToPb), missingSymbolIds: result.missingSymbolIds };
}

export function renderResultFromPb(response: pb.RenderSymbolsResponse): RenderResult {
  return { symbols: response.symbols.map(renderedSymbolFromPb), missingSymbolIds: [...response.missingSymbolIds] };
}

const TRACE_DIRECTION_TO_PB: Record<TraceDirection, pb.TraceDirection> = {
  callers: pb.TraceDirection.TRACE_DIRECTION_CALLERS,
  callees: pb.TraceDirection.TRACE_DIRECTION_CALLEES,
  references: pb.TraceDirection.TRACE_DIRECTION_REFERENCES,
  implementations: pb.TraceDirection.TRACE_DIRECTION_IMPLEMENTATIONS,
  supertypes: pb.TraceDirection.TRACE_DIRECTION_SUPERTYPES,
  subtypes: pb.TraceDirection.TRACE_DIRECTION_SUBTYPES,
};
const TRACE_DIRECTION_FROM_PB = invert(TRACE_DIRECTION_TO_PB);

const TRACE_PARTIAL_REASON_TO_PB: Record<TracePartialReason, pb.TracePartialReason> = {
  limit: pb.TracePartialReason.TRACE_PARTIAL_REASON_LIMIT,
  deadline: pb.TracePartialReason.TRACE_PARTIAL_REASON_DEADLINE,
  depth: pb.TracePartialReason.TRACE_PARTIAL_REASON_DEPTH,
  unresolved: pb.TracePartialReason.TRACE_PARTIAL_REASON_UNRESOLVED,
};
const TRACE_PARTIAL_REASON_FROM_PB = invert(TRACE_PARTIAL_REASON_TO_PB);

const TRACE_RESOLUTION_TO_PB: Record<TraceResolution, pb.TraceResolution> = {
  checker: pb.TraceResolution.TRACE_RESOLUTION_CHECKER,
  name: pb.TraceResolution.TRACE_RESOLUTION_NAME,
};
const TRACE_RESOLUTION_FROM_PB = invert(TRACE_RESOLUTION_TO_PB);

export function traceRequestFromPb(request: pb.TraceRequest): TraceRequest {
  if (request.direction === pb.TraceDirection.TRACE_DIRECTION_UNSPECIFIED) {
    throw new ConversionError('direction is required: callers, callees, references, implementations, supertypes or subtypes');
  }
  return {
    workspaceRoot: request.workspaceRoot,
    symbol: request.symbol,
    relativePath: request.relativePath,
    direction: fromTable(TRACE_DIRECTION_FROM_PB, request.direction, 'TraceDirection'),
    depth: request.depth,
    limit: request.limit,
  };
}

export function traceRequestToPb(request: TraceRequest): pb.TraceRequest {
  return { ...request, direction: TRACE_DIRECTION_TO_PB[request.direction] };
}

export function traceResultToPb(result: TraceResult): pb.TraceResponse {
  return {
    root: { ...result.root },
    nodes: result.nodes.map((n) => ({ ...n, resolvedBy: TRACE_RESOLUTION_TO_PB[n.resolvedBy] })),
    partial: result.partial,
    partialReason:
      result.partialReason === undefined ? pb.TracePartialReason.TRACE_PARTIAL_REASON_UNSPECIFIED : TRACE_PARTIAL_REASON_TO_PB[result.partialReason],
    totalFound: result.totalFound,
    returned: result.returned,
  };
}

export function traceResultFromPb(response: pb.TraceResponse): TraceResult {
  if (!response.root) throw new ConversionError('TraceResponse has no root');
  return {
    root: { ...response.root },
    // An older service sets no resolution: everything it found came from the checker.
    nodes: response.nodes.map((n) => ({ ...n, resolvedBy: TRACE_RESOLUTION_FROM_PB.get(n.resolvedBy) ?? 'checker' })),
    partial: response.partial,
    partialReason:
      response.partialReason === pb.TracePartialReason.TRACE_PARTIAL_REASON_UNSPECIFIED
        ? undefined
        : fromTable(TRACE_PARTIAL_REASON_FROM_PB, response.partialReason, 'TracePartialReason'),
    totalFound: response.totalFound,
    returned: response.returned,
  };
}
