// Workspace enumeration and the catalog diff. An unchanged file costs one
// stat: when size and mtime match the previous catalog its hash is reused,
// which is what keeps a no-change re-scan of 10k files far under a second.
import * as path from 'node:path';
import ignore, { type Ignore } from 'ignore';
import { type FsOps, type LoadRules, isDeclarationFile, isSourceFileName, languageOf, loadSource, realFs, skipForError } from './fileio';
import type { FileEntry, ScanResult, SkipReason, SkippedFile } from './types';

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

/**
 * Version-control metadata: not content at all, so never entered and never
 * listed among the skipped paths (every repository has one; listing it would
 * only bury the skips worth reading).
 */
const VCS_DIRS: ReadonlySet<string> = new Set(['.git', '.hg', '.svn']);

/**
 * Ignore files read in every folder, in this order. Rules are applied the way
 * git applies them: the last matching rule wins and deeper files come later,
 * so a .codecompassignore can re-include (`!pattern`) what .gitignore leaves
 * out, and a nested file can override its parents.
 */
export const IGNORE_FILES: readonly string[] = ['.gitignore', '.codecompassignore'];

/**
 * Skips decided by the rules of what a workspace holds (ignore files, default
 * excludes, nested repositories, declaration files), as opposed to a source
 * file that could not be read or used.
 */
export const RULE_SKIPS: ReadonlySet<SkipReason> = new Set<SkipReason>(['ignored', 'excluded', 'nested_repository', 'declaration_file']);

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
  /** Called with each folder's absolute path just before the walk reads it (the folder watch). */
  beforeFolder?: (absolutePath: string) => void;
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
  /** Workspace-relative folder of the ignore file; '' for the root. */
  base: string;
  /** Workspace-relative path of the ignore file, named in skip details. */
  source: string;
  matcher: Ignore;
}

interface DirFrame {
  rel: string;
  abs: string;
  real: string;
  rules: IgnoreRule[];
  /** Reached through a symlink: its files are other names for whatever they resolve to. */
  throughLink?: boolean;
}

const YIELD_EVERY = 512;

/** The rule that leaves `rel` out, if any: the last rule to decide, as in git. */
function ignoredBy(rules: IgnoreRule[], rel: string, isDir: boolean): { rule: IgnoreRule; pattern: string } | undefined {
  let decided: { rule: IgnoreRule; pattern: string } | undefined;
  for (const rule of rules) {
    const local = rule.base === '' ? rel : rel.slice(rule.base.length + 1);
    const result = rule.matcher.test(isDir ? local + '/' : local);
    const slash = local.lastIndexOf('/');
    // The matcher also calls a path ignored when a folder above it is. The
    // walk judged that folder already and entered it only because a later
    // rule re-included it, so only a rule that matches the path itself counts.
    if (result.ignored && (slash === -1 || !rule.matcher.test(local.slice(0, slash + 1)).ignored)) {
      decided = { rule, pattern: result.rule?.pattern ?? '' };
    } else if (result.unignored) {
      decided = undefined;
    }
  }
  return decided;
}

function ignoredDetail(match: { rule: IgnoreRule; pattern: string }): string {
  return match.pattern ? `matches "${match.pattern}" in ${match.rule.source}` : `matches ${match.rule.source}`;
}

function joinRel(dir: string, name: string): string {
  return dir === '' ? name : `${dir}/${name}`;
}

function isInside(root: string, candidate: string): boolean {
  return candidate === root || candidate.startsWith(root.endsWith(path.sep) ? root : root + path.sep);
}

/** A .git file (worktree, submodule) or folder in `dir`. */
function gitEntryIn(dir: string, fsOps: FsOps): 'file' | 'folder' | undefined {
  try {
    return fsOps.lstat(path.join(dir, '.git')).isDirectory() ? 'folder' : 'file';
  } catch {
    return undefined;
  }
}

/**
 * Whether the root is a repository or lies inside one. Only then is a nested
 * repository someone else's code; a plain folder of checkouts (a forced index
 * of ~/projects) indexes each of them instead of skipping them all.
 */
function inRepository(root: string, fsOps: FsOps): boolean {
  for (let dir = root; ; dir = path.dirname(dir)) {
    if (gitEntryIn(dir, fsOps) !== undefined) return true;
    if (path.dirname(dir) === dir) return false;
  }
}

/**
 * Lists source files below the root, honouring .gitignore and
 * .codecompassignore files at every level, the default excludes and extra
 * patterns, and skipping nested repositories. Symlinks are followed when
 * they stay inside the workspace and do not point back at an ancestor.
 * Every source file or folder left out is listed with its reason; a folder
 * left out whole is one entry, nothing below it is read.
 *
 * Each real file is listed once. A symlink inside the workspace is another
 * name for something the walk may list anyway, and links between sibling
 * folders (a -> ../b, b -> ../a) would otherwise list the same files again
 * at every turn of the cycle. So linked folders are walked last, in path
 * order, and only when their real folder has not been walked; and files
 * are grouped by real path, listed under their real path when the walk
 * reaches it there, else under the first link to them in path order. The
 * real path wins because it is the one that does not depend on which links
 * exist or on the order of the walk, and it is the path git tracks. Every
 * other name is skipped as a duplicate naming the path that was kept.
 */
export async function listSourceFiles(options: WalkOptions): Promise<Listing> {
  const fsOps = options.fsOps ?? realFs;
  const under = (options.under ?? '').replace(/\\/g, '/').replace(/^\/+|\/+$/g, '');
  // Default excludes are plain names at any depth, so a set lookup does what
  // the pattern matcher would at a fraction of the cost per entry.
  const excludedNames = new Set(DEFAULT_EXCLUDES);
  const extra = options.excludePatterns ?? [];
  const excludeMatcher = extra.length > 0 ? ignore().add(extra) : undefined;
  const skipNestedRepositories = inRepository(options.root, fsOps);
  const files: ListedFile[] = [];
  const skipped: SkippedFile[] = [];
  const skip = (relativePath: string, reason: SkipReason, detail: string, folder: boolean) =>
    skipped.push(folder ? { relativePath, reason, detail, folder } : { relativePath, reason, detail });
  // Only what lies on the way to, or below, the requested folder is walked or reported.
  const onBranch = (rel: string, isDir: boolean) =>
    under === '' ||
    rel.startsWith(under + '/') ||
    (isDir && (under === rel || under.startsWith(rel + '/')));
  const stack: DirFrame[] = [{ rel: '', abs: options.root, real: options.root, rules: [] }];
  /** Folders reached through a symlink, walked once the plain folders are. */
  const linked: DirFrame[] = [];
  /** Real path of every folder walked -> its workspace-relative path. */
  const walked = new Map<string, string>();
  /** Listed files with their real paths, grouped after the walk. */
  const found: { file: ListedFile; real: string; throughLink: boolean }[] = [];
  let sinceYield = 0;

  const nextFrame = (): DirFrame | undefined => {
    for (;;) {
      const plain = stack.pop();
      if (plain) return plain;
      if (linked.length === 0) return undefined;
      // The first linked folder in path order; a later one may be a name for the same folder.
      let first = 0;
      for (let i = 1; i < linked.length; i++) if (compareStrings(linked[i].rel, linked[first].rel) < 0) first = i;
      const [frame] = linked.splice(first, 1);
      const same = walked.get(frame.real);
      if (same === undefined) return frame;
      skip(frame.rel, 'duplicate', `symbolic link to ${same}/, indexed there`, true);
    }
  };

  for (let frame = nextFrame(); frame !== undefined; frame = nextFrame()) {
    walked.set(frame.real, frame.rel);
    options.beforeFolder?.(frame.abs);
    let entries;
    try {
      entries = fsOps.readdir(frame.abs);
    } catch (err) {
      const failure = skipForError(err);
      if (frame.rel !== '') skip(frame.rel, failure.reason, failure.detail, true);
      continue;
    }
    if (frame.rel !== '' && skipNestedRepositories) {
      const git = entries.find((e) => e.name === '.git');
      if (git) {
        skip(frame.rel, 'nested_repository', git.isDirectory() ? 'holds its own .git folder: another repository' : 'holds a .git file: a worktree or submodule', true);
        continue;
      }
    }
    let rules = frame.rules;
    for (const name of IGNORE_FILES) {
      if (!entries.some((e) => e.name === name && !e.isDirectory())) continue;
      try {
        const text = fsOps.readFile(path.join(frame.abs, name)).toString('utf8');
        rules = [...rules, { base: frame.rel, source: joinRel(frame.rel, name), matcher: ignore().add(text) }];
      } catch {
        // An unreadable ignore file excludes nothing; the files it would hide still get content checks.
      }
    }
    for (const entry of entries) {
      if (++sinceYield >= YIELD_EVERY) {
        sinceYield = 0;
        await new Promise<void>((resolve) => setImmediate(resolve));
        if (options.isCancelled?.()) throw new ScanCancelledError();
      }
      if (VCS_DIRS.has(entry.name)) continue;
      const isLink = entry.isSymbolicLink();
      let isDir = entry.isDirectory();
      // Sockets, devices and non-source files are not candidates, so not skips either.
      if (!isDir && !isLink && !(entry.isFile() && languageOf(entry.name) !== undefined)) continue;
      const rel = joinRel(frame.rel, entry.name);
      if (!onBranch(rel, isDir || isLink)) continue;
      const abs = path.join(frame.abs, entry.name);
      if (excludedNames.has(entry.name)) {
        skip(rel, 'excluded', 'dependencies or build output, left out by default', isDir || isLink);
        continue;
      }
      if (excludeMatcher && (excludeMatcher.ignores(rel) || ((isDir || isLink) && excludeMatcher.ignores(rel + '/')))) {
        skip(rel, 'excluded', 'matches the exclude patterns of the request', isDir);
        continue;
      }
      const ignoredMatch = isLink ? (ignoredBy(rules, rel, false) ?? ignoredBy(rules, rel, true)) : ignoredBy(rules, rel, isDir);
      if (ignoredMatch) {
        if (isDir || languageOf(entry.name) !== undefined) skip(rel, 'ignored', ignoredDetail(ignoredMatch), isDir);
        continue;
      }
      let real = path.join(frame.real, entry.name);
      if (isLink) {
        try {
          real = fsOps.realpath(abs);
          isDir = fsOps.stat(real).isDirectory();
        } catch (err) {
          const failure = skipForError(err);
          if (failure.reason === 'symlink_loop' || isSourceFileName(entry.name)) {
            skipped.push({
              relativePath: rel,
              ...(failure.reason === 'vanished' ? { reason: 'unreadable', detail: 'dangling symbolic link' } : failure),
            });
          }
          continue;
        }
        if (!isInside(options.root, real)) {
          if (isDir || isSourceFileName(entry.name)) skip(rel, 'outside_workspace', `symbolic link to ${real}`, isDir);
          continue;
        }
        if (isDir && isInside(real, frame.real)) {
          skip(rel, 'symlink_loop', `symbolic link to ancestor ${real}`, true);
          continue;
        }
        if (!isDir && !onBranch(rel, false)) continue;
      }
      if (isDir) {
        (isLink || frame.throughLink ? linked : stack).push({ rel, abs, real, rules, throughLink: isLink || frame.throughLink });
      } else if (isDeclarationFile(entry.name)) {
        skip(rel, 'declaration_file', 'declarations only: the type checker reads them, search indexes the implementations', false);
      } else if (isSourceFileName(entry.name)) {
        found.push({ file: { relativePath: rel, absolutePath: abs }, real, throughLink: isLink || frame.throughLink === true });
      }
    }
  }
  files.push(...onePerRealFile(found, skipped));
  files.sort((a, b) => compareStrings(a.relativePath, b.relativePath));
  skipped.sort((a, b) => compareStrings(a.relativePath, b.relativePath));
  return { files, skipped };
}

/** One name per real file: its real path when listed, else its first name in path order; the rest are duplicates. */
function onePerRealFile(found: { file: ListedFile; real: string; throughLink: boolean }[], skipped: SkippedFile[]): ListedFile[] {
  const byReal = new Map<string, typeof found>();
  for (const entry of found) {
    const names = byReal.get(entry.real);
    if (names) names.push(entry);
    else byReal.set(entry.real, [entry]);
  }
  const kept: ListedFile[] = [];
  for (const names of byReal.values()) {
    names.sort((a, b) => Number(a.throughLink) - Number(b.throughLink) || compareStrings(a.file.relativePath, b.file.relativePath));
    kept.push(names[0].file);
    for (const other of names.slice(1)) {
      skipped.push({ relativePath: other.file.relativePath, reason: 'duplicate', detail: `symbolic link to ${names[0].file.relativePath}, indexed there` });
    }
  }
  return kept;
}

/** Code-unit order, identical to Python's default str ordering for BMP paths. */
export function compareStrings(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * A listed file's catalog entry: one stat when its size and mtime match
 * `before` (whose hash then stands), else a read under the content rules; or
 * why it is skipped.
 */
function readEntry(listed: ListedFile, before: FileEntry | undefined, rules: LoadRules, fsOps: FsOps): FileEntry | SkippedFile {
  let stats;
  try {
    stats = fsOps.stat(listed.absolutePath);
  } catch (err) {
    return { relativePath: listed.relativePath, ...skipForError(err) };
  }
  const sizeBytes = Number(stats.size);
  // Domain mtimes are JS numbers (sub-microsecond precision is lost); the
  // comparison converts both sides the same way, so it stays consistent.
  const mtimeNs = Number(stats.mtimeNs);
  const language = languageOf(listed.relativePath)!;
  if (before && before.sizeBytes === sizeBytes && before.mtimeNs === mtimeNs && before.contentHash !== '') {
    return { relativePath: listed.relativePath, sizeBytes, mtimeNs, contentHash: before.contentHash, language };
  }
  const loaded = loadSource(listed.absolutePath, sizeBytes, rules, fsOps);
  if (!loaded.ok) return { relativePath: listed.relativePath, reason: loaded.reason, detail: loaded.detail };
  return { relativePath: listed.relativePath, sizeBytes, mtimeNs, contentHash: loaded.contentHash, language };
}

export interface ScanOptions extends WalkOptions, LoadRules {
  previous?: readonly FileEntry[];
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
    const read = readEntry(listed, previous.get(listed.relativePath), options, fsOps);
    if ('reason' in read) skipped.push(read);
    else files.push(read);
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

/** A scan a walk made, kept to answer the next scan from the folder watch's events alone. */
export interface WalkedScan {
  readonly files: readonly FileEntry[];
  readonly skipped: readonly SkippedFile[];
}

export interface RescanOptions extends LoadRules {
  root: string;
  fsOps?: FsOps;
}

/**
 * The scan after `walked`, from the entries the folder watch reported written
 * or renamed since, without a walk: the files `walked` listed that were written
 * (in place, or replaced by a rename as editors save) are read again, and
 * every other file and skip stands. undefined when an event may change what a
 * walk lists or skips: an entry created, removed or renamed, a source file the
 * walk did not list, an ignore file, a folder, a listed file now unreadable or
 * skipped. The diff is against `walked`.
 */
export function rescanWritten(walked: WalkedScan, events: readonly { path: string; kind: 'change' | 'rename' }[],
  options: RescanOptions): ScanResult | undefined {
  const started = performance.now();
  const fsOps = options.fsOps ?? realFs;
  const listed = new Map(walked.files.map((f) => [f.relativePath, f]));
  const written = new Set<string>();
  const known = (rel: string) =>
    listed.has(rel) || walked.skipped.some((s) => s.relativePath === rel || s.relativePath.startsWith(rel + '/')) ||
    walked.files.some((f) => f.relativePath.startsWith(rel + '/'));
  const kindOf = (absolutePath: string): 'file' | 'other' | 'none' => {
    try {
      return fsOps.lstat(absolutePath).isFile() ? 'file' : 'other';
    } catch {
      return 'none';
    }
  };
  for (const event of events) {
    if (!isInside(options.root, event.path) || event.path === options.root) return undefined;
    const rel = path.relative(options.root, event.path).split(path.sep).join('/');
    const name = path.basename(event.path);
    if (listed.has(rel)) {
      // Written in place, or replaced by a rename (an editor's atomic save): read it again.
      if (event.kind === 'rename' && kindOf(event.path) !== 'file') return undefined;
      written.add(rel);
      continue;
    }
    if (IGNORE_FILES.includes(name) || languageOf(name) !== undefined) return undefined;
    if (VCS_DIRS.has(name)) {
      // A repository's metadata: only its appearing or going changes what a walk lists.
      if (event.kind === 'rename') return undefined;
      continue;
    }
    // Any other entry: a write to a file a walk never lists changes nothing; a folder, or a
    // name the walk listed or skipped something under, may.
    const now = kindOf(event.path);
    if (now === 'other' || (event.kind === 'rename' && known(rel))) return undefined;
  }
  const files: FileEntry[] = [];
  const changed: string[] = [];
  for (const entry of walked.files) {
    if (!written.has(entry.relativePath)) {
      files.push(entry);
      continue;
    }
    const read = readEntry({ relativePath: entry.relativePath, absolutePath: path.join(options.root, entry.relativePath) },
      entry, options, fsOps);
    if ('reason' in read) return undefined;
    files.push(read);
    if (read.contentHash !== entry.contentHash) changed.push(entry.relativePath);
  }
  return { files, added: [], changed, removed: [], skipped: [...walked.skipped], durationMs: performance.now() - started };
}
