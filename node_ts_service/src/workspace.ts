// Per-workspace state of the main thread (the symbol-id → file map, the
// render cache; Programs live in the checker worker) and the rules that keep
// every request inside its workspace root.
import * as fs from 'node:fs';
import * as path from 'node:path';
import type ts from 'typescript';
import type { WalkedScan } from './scanner';
import type { Chunk } from './types';
import { FolderWatch, unwatchableReason } from './watch';

export type RequestErrorKind = 'invalid_argument' | 'not_found';

/** A problem with the request itself; the gRPC layer maps the kind to a status code. */
export class RequestError extends Error {
  constructor(
    readonly kind: RequestErrorKind,
    message: string,
  ) {
    super(message);
    this.name = 'RequestError';
  }
}

/** Characters of a refused argument a message shows. */
const QUOTE_CHARS = 80;

/**
 * `text` as a message shows it: quoted, or its first characters quoted and its length. Echoing a
 * 100 KB argument back fills the caller's screen or an agent's context with its own input.
 */
export function quoted(text: string, limit = QUOTE_CHARS): string {
  if (text.length <= limit) return JSON.stringify(text);
  return `${JSON.stringify(text.slice(0, limit))}… (${text.length.toLocaleString('en-US')} characters)`;
}

/** A file parsed for rendering, kept per content hash: parsing is the cost of a render. */
export interface RenderCacheEntry {
  contentHash: string;
  sourceFile: ts.SourceFile;
}

/** How much a workspace's render cache holds: at most `files` files of at most `chars` characters in all. */
export interface RenderCacheLimits {
  files: number;
  chars: number;
}

/** Enough for every symbol of a very large workspace; beyond it the oldest ids are forgotten. */
const MAX_SYMBOL_PATHS = 2_000_000;

export class Workspace {
  private readonly symbolPaths = new Map<string, string>();
  private readonly renderCache = new Map<string, RenderCacheEntry>();
  private renderCacheChars = 0;
  /** The last scan that got a watch token, for answering the next from the watch's events alone. */
  private lastScan: { token: string; scan: WalkedScan } | undefined;
  /** undefined: not decided yet; null: this workspace is walked on every scan (see `folderWatch`). */
  private watch: FolderWatch | null | undefined;
  private unwatchedReason: string | undefined;

  constructor(
    /** The root as the client names it, resolved but not symlink-resolved. */
    readonly givenRoot: string,
    /** The symlink-resolved root: every file must resolve below it. */
    readonly root: string,
    private readonly renderCacheLimits: RenderCacheLimits,
  ) {}

  rememberSymbols(relativePath: string, chunks: readonly Chunk[]): void {
    this.rememberSymbolIds(relativePath, chunks.map((c) => c.id));
  }

  rememberSymbolIds(relativePath: string, ids: Iterable<string>): void {
    for (const id of ids) {
      this.symbolPaths.delete(id);
      this.symbolPaths.set(id, relativePath);
    }
    while (this.symbolPaths.size > MAX_SYMBOL_PATHS) {
      this.symbolPaths.delete(this.symbolPaths.keys().next().value as string);
    }
  }

  /**
   * The watch of the folders scans walk, made on first use; null when the
   * workspace cannot be watched (its file system, the platform, or
   * `maxFolders` 0) and the reason.
   */
  folderWatch(maxFolders: number): { watch: FolderWatch | null; reason?: string } {
    if (this.watch === undefined) {
      this.unwatchedReason = maxFolders === 0 ? 'folder watching is off (ANALYSIS_MAX_WATCHED_FOLDERS=0)' : unwatchableReason(this.root);
      this.watch = this.unwatchedReason === undefined ? new FolderWatch(maxFolders) : null;
    }
    return { watch: this.watch, reason: this.watch ? undefined : this.unwatchedReason };
  }

  close(): void {
    this.watch?.closeAll();
  }

  rememberScan(token: string, scan: WalkedScan): void {
    this.lastScan = token === '' ? undefined : { token, scan };
  }

  /** The scan `token` stands for, when it is the last one remembered. */
  scanOf(token: string): WalkedScan | undefined {
    return this.lastScan !== undefined && this.lastScan.token === token ? this.lastScan.scan : undefined;
  }

  pathOfSymbol(id: string): string | undefined {
    return this.symbolPaths.get(id);
  }

  cachedRender(relativePath: string, contentHash: string): RenderCacheEntry | undefined {
    const entry = this.renderCache.get(relativePath);
    if (!entry || entry.contentHash !== contentHash) return undefined;
    this.renderCache.delete(relativePath);
    this.renderCache.set(relativePath, entry);
    return entry;
  }

  cacheRender(relativePath: string, entry: RenderCacheEntry): void {
    this.forgetRender(relativePath);
    this.renderCache.set(relativePath, entry);
    this.renderCacheChars += entry.sourceFile.text.length;
    const { files, chars } = this.renderCacheLimits;
    // The newest entry stays even alone over the budget: the render that parsed it reads it next.
    while (this.renderCache.size > 1 && (this.renderCache.size > files || this.renderCacheChars > chars)) {
      this.forgetRender(this.renderCache.keys().next().value as string);
    }
  }

  private forgetRender(relativePath: string): void {
    const entry = this.renderCache.get(relativePath);
    if (!entry) return;
    this.renderCache.delete(relativePath);
    this.renderCacheChars -= entry.sourceFile.text.length;
  }


}

/** A request path inside the workspace that does not exist (any more): for ChunkFiles, a vanished file. */
export class MissingPathError extends RequestError {
  constructor(
    readonly relativePath: string,
    raw: string,
  ) {
    super('not_found', `no such file or directory in the workspace: ${quoted(raw)}`);
    this.name = 'MissingPathError';
  }
}

export interface ResolvedPath {
  relativePath: string;
  absolutePath: string;
  isDirectory: boolean;
  /** Set when the path exists but resolves (through a symlink) outside the workspace. */
  realOutside: string | undefined;
}

export function toPosix(p: string): string {
  return p.split(path.sep).join('/');
}

function relativeInside(root: string, candidate: string): string | undefined {
  const rel = path.relative(root, candidate);
  if (rel === '') return '';
  if (rel === '..' || rel.startsWith('..' + path.sep) || path.isAbsolute(rel)) return undefined;
  return rel;
}

/**
 * A request path (workspace-relative, or absolute inside one of `roots`: the workspace's real
 * root first, then the one the caller named) as the workspace-relative path it names, by its text
 * alone: `.` and `..` segments resolved, so `src/../src/x.ts` is `src/x.ts`, the form indexed
 * paths have. One that leaves the workspace ("../x", "/etc/passwd") is refused.
 */
export function lexicalRelativePath(roots: readonly string[], raw: string): string {
  if (raw.trim() === '') throw new RequestError('invalid_argument', 'empty path');
  if (raw.includes('\0')) throw new RequestError('invalid_argument', 'path contains a NUL character');
  const absolute = path.isAbsolute(raw) ? path.resolve(raw) : path.resolve(roots[0], raw);
  for (const root of path.isAbsolute(raw) ? roots : roots.slice(0, 1)) {
    const rel = relativeInside(root, absolute);
    if (rel !== undefined) return toPosix(rel);
  }
  throw new RequestError('invalid_argument', `path ${quoted(raw)} is outside the workspace root ${roots.at(-1)}`);
}

/**
 * Resolves a request path (workspace-relative, or absolute inside the root)
 * without following it out of the workspace. Paths that escape lexically
 * ("../x", "/etc/passwd") are refused outright.
 */
export function resolveRequestPath(workspace: Workspace, raw: string): ResolvedPath {
  const rel = lexicalRelativePath([workspace.root, workspace.givenRoot], raw);
  const absolutePath = rel === '' ? workspace.root : path.join(workspace.root, rel);
  let real: string;
  let isDirectory: boolean;
  try {
    real = fs.realpathSync.native(absolutePath);
    isDirectory = fs.statSync(real).isDirectory();
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') throw new MissingPathError(toPosix(rel), raw);
    if (code === 'ELOOP') {
      return { relativePath: toPosix(rel), absolutePath, isDirectory: false, realOutside: undefined };
    }
    throw err;
  }
  return {
    relativePath: toPosix(rel),
    absolutePath,
    isDirectory,
    realOutside: relativeInside(workspace.root, real) === undefined ? real : undefined,
  };
}

/** Bounded set of open workspaces, least recently used evicted first. */
export class WorkspaceRegistry {
  private readonly open = new Map<string, Workspace>();

  constructor(
    private readonly maxWorkspaces: number,
    private readonly renderCacheLimits: RenderCacheLimits,
  ) {}

  get(rawRoot: string): Workspace {
    if (!rawRoot || !path.isAbsolute(rawRoot)) {
      throw new RequestError('invalid_argument', `workspace_root must be an absolute path, got ${quoted(rawRoot)}`);
    }
    const givenRoot = path.resolve(rawRoot);
    let root: string;
    try {
      root = fs.realpathSync.native(givenRoot);
      if (!fs.statSync(root).isDirectory()) throw Object.assign(new Error('not a directory'), { code: 'ENOTDIR' });
    } catch {
      throw new RequestError('invalid_argument', `workspace_root is not an existing directory: ${givenRoot}`);
    }
    const existing = this.open.get(root);
    if (existing) {
      this.open.delete(root);
      this.open.set(root, existing);
      return existing;
    }
    const workspace = new Workspace(givenRoot, root, this.renderCacheLimits);
    this.open.set(root, workspace);
    while (this.open.size > this.maxWorkspaces) {
      const oldest = this.open.keys().next().value as string;
      this.open.get(oldest)?.close();
      this.open.delete(oldest);
    }
    return workspace;
  }

  close(): void {
    for (const workspace of this.open.values()) workspace.close();
    this.open.clear();
  }
}
