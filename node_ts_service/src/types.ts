// Domain types of the analysis service. Generated proto types stop at
// convert.ts; everything else in this service speaks these.

export type Language = 'typescript' | 'tsx' | 'javascript' | 'jsx';

export type NodeKind =
  | 'function'
  | 'method'
  | 'class'
  | 'interface'
  | 'type'
  | 'enum'
  | 'component'
  | 'variable'
  | 'namespace'
  | 'constructor'
  | 'accessor'
  /** A file's card: the whole file with its top-level symbols collapsed, named MODULE_CHUNK_NAME. */
  | 'module';

export interface SymbolReference {
  name: string;
  signature: string;
  relativePath: string; // '' when declared outside the workspace
  chunkId: string; // '' when the declaration is not a chunk of this workspace
}

export interface Chunk {
  id: string;
  snippetHash: string;
  relativePath: string;
  language: Language;
  nodeKind: NodeKind;
  name: string;
  qualifiedName: string;
  parentId: string; // '' for top level
  childIds: string[];
  depth: number;
  signature: string;
  fullSource: string;
  collapsedSource: string;
  startLine: number; // 1-based, after leading JSDoc
  endLine: number; // 1-based, inclusive
  jsdoc: string;
  jsdocStartLine: number; // 0 when no JSDoc
  relevantImports: string[];
  isTest: boolean;
  embeddingText: string;
  references: SymbolReference[];
  embeddingTokenCount: number;
  /** The whitespace indenting startLine in the file; a rendering removes it from every following line. */
  indent: string;
}

export type SkipReason =
  | 'minified'
  /** Generated source (a generator's header marker or file-name suffix): SKIP_REASON_GENERATED. */
  | 'generated'
  | 'binary'
  | 'not_utf8'
  | 'too_large'
  | 'unreadable'
  | 'vanished'
  | 'outside_workspace'
  | 'symlink_loop'
  | 'ignored'
  | 'nested_repository'
  | 'declaration_file'
  | 'excluded'
  /** Read, but the parser or checker failed on it (stack, crash, time limit): SKIP_REASON_CHUNK_FAILED. */
  | 'chunk_failed'
  /** Another name, through a symlink, for a file or folder indexed under another path. */
  | 'duplicate';

export interface FileEntry {
  relativePath: string;
  sizeBytes: number;
  mtimeNs: number;
  contentHash: string; // hex sha-256 of the bytes
  language: Language;
}

export interface SkippedFile {
  relativePath: string;
  reason: SkipReason;
  detail: string;
  /** A folder skipped as a whole: one entry stands for everything below it. */
  folder?: boolean;
}

export interface ScanResult {
  files: FileEntry[];
  added: string[];
  changed: string[];
  removed: string[];
  skipped: SkippedFile[];
  durationMs: number;
  /** Stands for this scan while its folders do not change; '' when they are not watched. */
  watchToken?: string;
  /** The request's unchangedSince held: nothing is listed, the caller's catalog stands. */
  unchanged?: boolean;
  /** The request left its catalog out and the token did not hold: nothing was walked; ask again with it. */
  previousNeeded?: boolean;
  /** The diff is against the scan of the request's token, read from the watch's events (ScanWorkspaceResponse.since_token). */
  sinceToken?: boolean;
  /** Why the folders are not watched (logged by the server; not on the wire). */
  unwatchedReason?: string;
}

export type FileStatus = 'ok' | 'syntax_errors' | 'skipped';

export interface ChunkedFile {
  relativePath: string;
  status: FileStatus;
  skipReason?: SkipReason;
  skipDetail: string;
  diagnostics: string[];
  chunks: Chunk[];
  contentHash: string;
  lineCount: number;
  mtimeNs: number;
  sizeBytes: number;
}

export interface RenderSpec {
  symbolId: string;
  expandChildIds: string[];
  /** A 1-based file line to centre a long symbol's window on; 0 or absent for the whole symbol. */
  focusLine?: number;
}

export interface RenderedSymbol {
  symbolId: string;
  relativePath: string;
  qualifiedName: string;
  source: string;
  tokenCount: number;
  startLine: number;
  endLine: number;
  unknownChildIds: string[];
  /** First and last file line shown when focusLine cut the symbol to a window; 0 when whole. */
  windowStartLine: number;
  windowEndLine: number;
}
