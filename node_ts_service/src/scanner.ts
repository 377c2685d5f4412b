// Workspace enumeration and the catalog diff. An unchanged file costs one
// stat: when size and mtime match the previous catalog its hash is reused,
// which is what keeps a no-change re-scan of 10k files far under a second.
import * as path from 'node:path';
import ignore, { type Ignore } from 'ignore';
import { type FsOps, isSourceFileName, languageOf, loadSource, realFs, skipForError } from './fileio';
import type { FileEntry, ScanResult, SkippedFile } from './types';

/** Directories that hold dependencies, build output or VCS data, never sources worth indexing. */
export const DEFAULT_EXCLUDES: readonly string[] = [
  'node_modules',
  'bower_components',
  'jspm_packages',
  'dist',
  'build',
  'out',
  'coverage',
  '.git',
  '.hg',
  '.svn',
  '.next',
  '.nuxt',
  '.turbo',
  '.cache',
];

export class ScanCancelledError extends Error {
  constructor() {
    super('scan cancelled');
    this.name = 'ScanCancelledError';
  }
}

export interface WalkOptions {
  /** Real (symlink-resolved) absolute path of the workspace root. */
  root: string;
  /** Workspace-relative directory to restrict the walk to; '' for all. */
  under?: string;
  excludePatterns?: readonly string[];
  fsOps?: FsOps;
  isCancelled?: () => boolean;
}

export interface ListedFile {
  relativePath: string;
  absolutePath: string;
}

export interface Listing {
  files: ListedFile[];
  skipped: SkippedFile[];
}

interface IgnoreRule {
  base: string;
  matcher: Ignore;
}

interface DirFrame {
  rel: string;
  abs: string;
  real: string;
  rules: IgnoreRule[];
}

const YIELD_EVERY = 512;

function isIgnored(rules: IgnoreRule[], rel: string, isDir: boolean): boolean {
  for (const rule of rules) {
    const local = rule.base === '' ? rel : rel.slice(rule.base.length + 1);
    if (rule.matcher.ignores(isDir ? local + '/' : local)) return true;
  }
  return false;
}

function joinRel(dir: string, name: string): string {
  return dir === '' ? name : `${dir}/${name}`;
}

function isInside(root: string, candidate: string): boolean {
  return candidate === root || candidate.startsWith(root.endsWith(path.sep) ? root : root + path.sep);
}

/**
 * Lists source files below the root, honouring .gitignore files at every
 * level, the default excludes and extra patterns. Symlinks are followed when
 * they stay inside the workspace and do not point back at an ancestor.
 */
export async function listSourceFiles(options: WalkOptions): Promise<Listing> {
  const fsOps = options.fsOps ?? realFs;
  const under = (options.under ?? '').replace(/\\/g, '/').replace(/^\/+|\/+$/g, '');
  // Default excludes are plain names at any depth, so a set lookup does what
  // the pattern matcher would at a fraction of the cost per entry.
  const excludedNames = new Set(DEFAULT_EXCLUDES);
  const extra = options.excludePatterns ?? [];
  const rootRules: IgnoreRule[] = extra.length > 0 ? [{ base: '', matcher: ignore().add(extra as string[]) }] : [];
  const files: ListedFile[] = [];
  const skipped: SkippedFile[] = [];
  const stack: DirFrame[] = [{ rel: '', abs: options.root, real: options.root, rules: rootRules }];
  let sinceYield = 0;

  while (stack.length > 0) {
    const frame = stack.pop()!;
    let entries;
    try {
      entries = fsOps.readdir(frame.abs);
    } catch (err) {
      if (frame.rel !== '') skipped.push({ relativePath: frame.rel, ...skipForError(err) });
      continue;
    }
    let rules = frame.rules;
    if (entries.some((e) => e.name === '.gitignore' && !e.isDirectory())) {
      try {
        const text = fsOps.readFile(path.join(frame.abs, '.gitignore')).toString('utf8');
        rules = [...rules, { base: frame.rel, matcher: ignore().add(text) }];
      } catch {
        // An unreadable .gitignore excludes nothing; the files it would hide still get content checks.
      }
    }
    for (const entry of entries) {
      if (++sinceYield >= YIELD_EVERY) {
        sinceYield = 0;
        await new Promise<void>((resolve) => setImmediate(resolve));
        if (options.isCancelled?.()) throw new ScanCancelledError();
      }
      if (excludedNames.has(entry.name)) continue;
      const rel = joinRel(frame.rel, entry.name);
      const abs = path.join(frame.abs, entry.name);
      let isDir = entry.isDirectory();
      let real = path.join(frame.real, entry.name);
      if (entry.isSymbolicLink()) {
        if (isIgnored(rules, rel, false) || isIgnored(rules, rel, true)) continue;
        try {
          real = fsOps.realpath(abs);
          isDir = fsOps.stat(real).isDirectory();
        } catch (err) {
          const skip = skipForError(err);
          if (skip.reason === 'symlink_loop' || isSourceFileName(entry.name)) {
            skipped.push({
              relativePath: rel,
              ...(skip.reason === 'vanished' ? { reason: 'unreadable', detail: 'dangling symbolic link' } : skip),
            });
          }
          continue;
        }
        if (!isInside(options.root, real)) {
          if (isDir || isSourceFileName(entry.name)) {
            skipped.push({ relativePath: rel, reason: 'outside_workspace', detail: `symbolic link to ${real}` });
          }
          continue;
        }
        if (isDir && isInside(real, frame.real)) {
          skipped.push({ relativePath: rel, reason: 'symlink_loop', detail: `symbolic link to ancestor ${real}` });
          continue;
        }
      } else if (!isDir && !(entry.isFile() && isSourceFileName(entry.name))) {
        continue;
      }
      if (isIgnored(rules, rel, isDir)) continue;
      if (isDir) {
        // Walk only the branch that leads to, or lies below, the requested folder.
        if (under !== '' && !(under === rel || under.startsWith(rel + '/') || rel.startsWith(under + '/'))) continue;
        stack.push({ rel, abs, real, rules });
      } else if (isSourceFileName(entry.name)) {
        if (under !== '' && !rel.startsWith(under + '/')) continue;
        files.push({ relativePath: rel, absolutePath: abs });
      }
    }
  }
  files.sort((a, b) => compareStrings(a.relativePath, b.relativePath));
  skipped.sort((a, b) => compareStrings(a.relativePath, b.relativePath));
  return { files, skipped };
}

/** Code-unit order, identical to Python's default str ordering for BMP paths. */
export function compareStrings(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

export interface ScanOptions extends WalkOptions {
  previous?: readonly FileEntry[];
  maxFileBytes: number;
}

export async function scanWorkspace(options: ScanOptions): Promise<ScanResult> {
  const started = performance.now();
  const fsOps = options.fsOps ?? realFs;
  const listing = await listSourceFiles(options);
  const previous = new Map<string, FileEntry>();
  for (const entry of options.previous ?? []) previous.set(entry.relativePath, entry);

  const files: FileEntry[] = [];
  const skipped = listing.skipped;
  let sinceYield = 0;
  for (const listed of listing.files) {
    if (++sinceYield >= YIELD_EVERY) {
      sinceYield = 0;
      await new Promise<void>((resolve) => setImmediate(resolve));
      if (options.isCancelled?.()) throw new ScanCancelledError();
    }
    let stats;
    try {
      stats = fsOps.stat(listed.absolutePath);
    } catch (err) {
      skipped.push({ relativePath: listed.relativePath, ...skipForError(err) });
      continue;
    }
    const sizeBytes = Number(stats.size);
    // Domain mtimes are JS numbers (sub-microsecond precision is lost); the
    // comparison converts both sides the same way, so it stays consistent.
    const mtimeNs = Number(stats.mtimeNs);
    const language = languageOf(listed.relativePath)!;
    const before = previous.get(listed.relativePath);
    if (before && before.sizeBytes === sizeBytes && before.mtimeNs === mtimeNs && before.contentHash !== '') {
      files.push({ relativePath: listed.relativePath, sizeBytes, mtimeNs, contentHash: before.contentHash, language });
      continue;
    }
    const loaded = loadSource(listed.absolutePath, sizeBytes, options.maxFileBytes, fsOps);
    if (!loaded.ok) {
      skipped.push({ relativePath: listed.relativePath, reason: loaded.reason, detail: loaded.detail });
      continue;
    }
    files.push({ relativePath: listed.relativePath, sizeBytes, mtimeNs, contentHash: loaded.contentHash, language });
  }
  skipped.sort((a, b) => compareStrings(a.relativePath, b.relativePath));

  const added: string[] = [];
  const changed: string[] = [];
  const current = new Set<string>();
  for (const file of files) {
    current.add(file.relativePath);
    const before = previous.get(file.relativePath);
    if (!before) added.push(file.relativePath);
    else if (before.contentHash !== file.contentHash) changed.push(file.relativePath);
  }
  const removed = [...previous.keys()].filter((p) => !current.has(p)).sort(compareStrings);
  return { files, added, changed, removed, skipped, durationMs: performance.now() - started };
}
