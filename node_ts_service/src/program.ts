// Projects: which tsconfig/jsconfig a file belongs to, and one LanguageService
// per project over a versioned in-memory host. Programs are the expensive part
// of this service, so they are created lazily, share one DocumentRegistry
// (lib .d.ts files are parsed once for every project), and only a bounded
// number stay alive.
import * as fs from 'node:fs';
import * as path from 'node:path';
import ts from 'typescript';
import { sha256Hex } from './fileio';
import { DEFAULT_EXCLUDES } from './scanner';

/** Shared by every project of every workspace: identical files (lib.*.d.ts) are parsed once. */
const documentRegistry = ts.createDocumentRegistry(ts.sys.useCaseSensitiveFileNames);

const INFERRED = '<inferred>';
const CONFIG_NAMES = ['tsconfig.json', 'jsconfig.json'];

/** Files outside any config: JS and TS as a bundler-based app would see them, types never reported. */
const INFERRED_OPTIONS: ts.CompilerOptions = {
  allowJs: true,
  checkJs: false,
  jsx: ts.JsxEmit.Preserve,
  target: ts.ScriptTarget.ES2022,
  module: ts.ModuleKind.ESNext,
  moduleResolution: ts.ModuleResolutionKind.Bundler,
  allowImportingTsExtensions: true,
  resolveJsonModule: true,
  esModuleInterop: true,
  skipLibCheck: true,
  noEmit: true,
  allowNonTsExtensions: true,
};

/** tsserver's defaults for jsconfig.json, which exists precisely to type JS projects. */
const JSCONFIG_DEFAULTS: ts.CompilerOptions = {
  allowJs: true,
  maxNodeModuleJsDepth: 2,
  allowSyntheticDefaultImports: true,
  skipLibCheck: true,
  noEmit: true,
};

interface HostFile {
  version: number;
  text: string;
  hash: string;
  /** Set when the text came from disk rather than from a request; refreshed by mtime. */
  diskMtimeMs: number | undefined;
}

/**
 * A LanguageServiceHost over Map<path, {version, text}>. A file's version
 * moves only when its content hash changes, so re-submitting identical text
 * (the common case on re-index) keeps every cached AST and type.
 */
export class VersionedHost implements ts.LanguageServiceHost {
  readonly files = new Map<string, HostFile>();
  roots: string[];
  private projectVersion = 0;
  /** The file whose text the LanguageService asked for last: the one it parses next. */
  private lastRead: string | undefined;
  /**
   * Files the checker is not given, with the hash of the text that was left
   * out: nested deeper than MAX_CHECKED_NESTING, or found unparsable (the
   * parser ran out of stack). The Program gets an empty text in their place
   * until they change, so one such file costs its project neither its type
   * checker nor minutes of inference.
   */
  private readonly unparsable = new Map<string, { hash: string; why: string }>();

  constructor(
    private readonly options: ts.CompilerOptions,
    private readonly currentDirectory: string,
    private readonly workspaceRoot: string,
    roots: string[],
  ) {
    this.roots = roots;
  }

  setRoots(roots: string[]): void {
    if (roots.length === this.roots.length && roots.every((r, i) => r === this.roots[i])) return;
    this.roots = roots;
    this.projectVersion++;
  }

  setText(fileName: string, text: string, hash: string): void {
    const existing = this.files.get(fileName);
    if (existing && existing.hash === hash) {
      existing.diskMtimeMs = undefined;
      return;
    }
    this.files.set(fileName, { version: (existing?.version ?? 0) + 1, text, hash, diskMtimeMs: undefined });
    this.projectVersion++;
    this.excludeTooDeep(fileName, text, hash);
  }

  private excludeTooDeep(fileName: string, text: string, hash: string): void {
    if (nestsDeeperThan(text, MAX_CHECKED_NESTING)) {
      this.unparsable.set(fileName, { hash, why: `nested more than ${MAX_CHECKED_NESTING} levels deep, too deep to type-check` });
    }
  }

  /** The file read last, and forgets it: after a failed parse, the file that failed. */
  takeLastRead(): string | undefined {
    const last = this.lastRead;
    this.lastRead = undefined;
    return last;
  }

  /** Leaves the file's current text out of the Program; false when it already is (or is unknown). */
  excludeUnparsable(fileName: string): boolean {
    const file = this.load(fileName);
    if (!file || this.excludedWhy(fileName) !== undefined) return false;
    this.unparsable.set(fileName, { hash: file.hash, why: 'the parser ran out of stack on it' });
    this.projectVersion++;
    return true;
  }

  /** Why the Program does not see this file's current text; undefined when it does. */
  excludedWhy(fileName: string): string | undefined {
    const file = this.files.get(fileName);
    const excluded = this.unparsable.get(fileName);
    return file !== undefined && excluded?.hash === file.hash ? excluded.why : undefined;
  }

  /** Picks up edits to files the program loaded from disk (imports of requested files). */
  refreshFromDisk(): void {
    for (const [fileName, file] of this.files) {
      if (file.diskMtimeMs === undefined || !this.isWorkspaceSource(fileName)) continue;
      let mtimeMs: number;
      try {
        mtimeMs = fs.statSync(fileName).mtimeMs;
      } catch {
        this.files.delete(fileName);
        this.projectVersion++;
        continue;
      }
      if (mtimeMs === file.diskMtimeMs) continue;
      const text = ts.sys.readFile(fileName) ?? '';
      const hash = sha256Hex(Buffer.from(text));
      file.diskMtimeMs = mtimeMs;
      if (hash !== file.hash) {
        file.text = text;
        file.hash = hash;
        file.version++;
        this.projectVersion++;
        this.excludeTooDeep(fileName, text, hash);
      }
    }
  }

  /** Drops texts the current program no longer uses, so memory follows the program. */
  prune(keep: ReadonlySet<string>): void {
    for (const fileName of this.files.keys()) {
      if (!keep.has(fileName)) this.files.delete(fileName);
    }
  }

  private isWorkspaceSource(fileName: string): boolean {
    return fileName.startsWith(this.workspaceRoot + '/') && !fileName.includes('/node_modules/');
  }

  private load(fileName: string): HostFile | undefined {
    const cached = this.files.get(fileName);
    if (cached) return cached;
    const text = ts.sys.readFile(fileName);
    if (text === undefined) return undefined;
    let mtimeMs: number;
    try {
      mtimeMs = fs.statSync(fileName).mtimeMs;
    } catch {
      return undefined;
    }
    const file: HostFile = { version: 1, text, hash: sha256Hex(Buffer.from(text)), diskMtimeMs: mtimeMs };
    this.files.set(fileName, file);
    this.excludeTooDeep(fileName, text, file.hash);
    return file;
  }

  getProjectVersion(): string {
    return String(this.projectVersion);
  }
  getScriptFileNames(): string[] {
    return this.roots;
  }
  getScriptVersion(fileName: string): string {
    const version = String(this.load(fileName)?.version ?? 0);
    return this.excludedWhy(fileName) !== undefined ? `${version}-excluded` : version;
  }
  getScriptSnapshot(fileName: string): ts.IScriptSnapshot | undefined {
    const file = this.load(fileName);
    if (!file) return undefined;
    if (this.excludedWhy(fileName) !== undefined) return ts.ScriptSnapshot.fromString('');
    this.lastRead = fileName;
    return ts.ScriptSnapshot.fromString(file.text);
  }
  getCompilationSettings(): ts.CompilerOptions {
    return this.options;
  }
  getCurrentDirectory(): string {
    return this.currentDirectory;
  }
  getDefaultLibFileName(options: ts.CompilerOptions): string {
    return ts.getDefaultLibFilePath(options);
  }
  fileExists(fileName: string): boolean {
    return this.files.has(fileName) || ts.sys.fileExists(fileName);
  }
  readFile(fileName: string): string | undefined {
    return this.files.get(fileName)?.text ?? ts.sys.readFile(fileName);
  }
  readDirectory = ts.sys.readDirectory.bind(ts.sys);
  directoryExists = ts.sys.directoryExists.bind(ts.sys);
  getDirectories = ts.sys.getDirectories.bind(ts.sys);
  realpath = ts.sys.realpath?.bind(ts.sys);
  useCaseSensitiveFileNames(): boolean {
    return ts.sys.useCaseSensitiveFileNames;
  }
}

/** Keeps the inferred options' lib files alive in the DocumentRegistry, parsed and bound. */
let libraryHolder: ts.LanguageService | undefined;

/**
 * Parses and binds the default lib files (lib.dom.d.ts alone is most of a
 * second) for the inferred options, and keeps them in the shared registry,
 * so the first ChunkFiles with references after a start, or after a
 * project's eviction, only pays for the workspace files it touches. Config
 * projects with the same source-affecting options share them too.
 */
export function warmLibraries(): void {
  if (libraryHolder) return;
  // A Program loads the default lib only for a non-empty root set; the root
  // lives in a directory with no node_modules, so no @types come along.
  const warmRoot = path.join(path.parse(process.cwd()).root, '__codecompass_lib_warmup__');
  const warmFile = `${warmRoot}/warmup.ts`;
  const { host, service } = openProject(INFERRED_OPTIONS, warmRoot, warmRoot, [warmFile]);
  host.setText(warmFile, 'export {};\n', 'warmup');
  // Creating the checker binds every file; bound state lives on the shared SourceFile.
  service.getProgram()?.getTypeChecker();
  libraryHolder = service;
}

interface ParsedConfig {
  options: ts.CompilerOptions;
  fileNames: string[];
  fileSet: Set<string>;
  mtimeMs: number;
  /** Request generation in which it was last re-read, to re-read at most once per request. */
  generation: number;
}

/**
 * Nesting, in brackets, past which a file is kept out of Programs. The parser
 * copes (see WORKER_STACK_MB), but the checker infers a nested literal's type
 * in time that grows with the square of its depth (TypeScript 6.0: 10 s at
 * 2,000 levels, 86 s at 5,000, measured on an array literal), and it does so
 * for every file that merely uses the value. Hand-written code stays far
 * below: a callback pyramid or a nested config is a few dozen levels.
 */
export const MAX_CHECKED_NESTING = 1000;

/**
 * Whether brackets ((, [, {) nest deeper than `limit` anywhere in `text`.
 * A scan of characters, not a parse: strings and comments are skipped, a
 * regular expression's brackets are not (they balance in practice), and it
 * stops as soon as the answer is yes.
 */
export function nestsDeeperThan(text: string, limit: number): boolean {
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 40 || c === 91 || c === 123) {
      if (++depth > limit) return true;
    } else if (c === 41 || c === 93 || c === 125) {
      if (depth > 0) depth--;
    } else if (c === 34 || c === 39 || c === 96) {
      // A string or template: to its closing quote (a template's ${} counts as text).
      for (i++; i < text.length && text.charCodeAt(i) !== c; i++) if (text.charCodeAt(i) === 92) i++;
    } else if (c === 47 && text.charCodeAt(i + 1) === 47) {
      const end = text.indexOf('\n', i);
      i = end < 0 ? text.length : end;
    } else if (c === 47 && text.charCodeAt(i + 1) === 42) {
      const end = text.indexOf('*/', i + 2);
      i = end < 0 ? text.length : end + 1;
    }
  }
  return false;
}

/** A LanguageService and the host it reads files through. */
export interface Project {
  host: VersionedHost;
  service: ts.LanguageService;
}

/**
 * The one way this service makes a LanguageService: over a VersionedHost,
 * with the shared DocumentRegistry. Chunking's per-config projects, the lib
 * warm-up and Trace's whole-workspace project all come from here.
 */
export function openProject(options: ts.CompilerOptions, currentDirectory: string, workspaceRoot: string, roots: string[]): Project {
  const host = new VersionedHost(options, currentDirectory, workspaceRoot, roots);
  return { host, service: ts.createLanguageService(host, documentRegistry) };
}

export interface ProgramFile {
  absolutePath: string;
  text: string;
  contentHash: string;
}

export interface ProgramView {
  sourceFile: ts.SourceFile;
  checker: ts.TypeChecker;
}

/** How many unparsable files one Program build may leave out before it gives up on references. */
const MAX_UNPARSABLE_PER_BUILD = 8;

export function isStackOverflow(err: unknown): boolean {
  return err instanceof RangeError && /call stack/i.test(err.message);
}

function errorLine(err: unknown): string {
  return (err instanceof Error ? err.message : String(err)).split('\n')[0];
}

/** A project's Program and checker, or why there is none (one line). */
type Built = { program: ts.Program | undefined; checker: ts.TypeChecker | undefined; failure?: undefined } | { failure: string };

export class ProjectRegistry {
  private readonly configs = new Map<string, ParsedConfig>();
  /** Insertion order is recency: the first entry is the least recently used. */
  private readonly live = new Map<string, Project>();
  private generation = 0;

  constructor(
    private readonly workspaceRoot: string,
    private readonly maxPrograms: number,
  ) {}

  get liveProjectCount(): number {
    return this.live.size;
  }

  /**
   * Resolves each file in its project's Program and hands it to `visit`
   * together with that Program's checker. Files are grouped by project so
   * each Program is brought up to date once per call. A view stays usable
   * after its project is evicted: a Program is immutable and outlives the
   * LanguageService that built it; eviction only stops it being reused.
   */
  withPrograms(
    files: readonly ProgramFile[],
    visit: (file: ProgramFile, view: ProgramView | undefined, note?: string) => void,
    onBuild: (building: boolean) => void = () => {},
  ): void {
    this.generation++;
    const groups = new Map<string, ProgramFile[]>();
    for (const file of files) {
      const key = this.projectKeyFor(file.absolutePath);
      const group = groups.get(key);
      if (group) group.push(file);
      else groups.set(key, [file]);
    }
    for (const [key, group] of groups) {
      const project = this.project(key);
      if (key === INFERRED) {
        // Inferred roots are just the requested files; their imports come in
        // through module resolution. A whole config-less workspace never has
        // to fit in one Program.
        project.host.setRoots(group.map((f) => f.absolutePath));
      }
      project.host.refreshFromDisk();
      for (const file of group) project.host.setText(file.absolutePath, file.text, file.contentHash);
      onBuild(true);
      const built = this.build(key, project);
      onBuild(false);
      if (built.failure !== undefined) {
        // Chunked without references, and each file says why.
        for (const file of group) visit(file, undefined, `references unavailable: ${built.failure}`);
        continue;
      }
      const { program, checker } = built;
      const host = this.live.get(key)?.host ?? project.host;
      for (const file of group) {
        // A file left out of the Program has an empty SourceFile there: it is parsed on its own.
        const excluded = host.excludedWhy(file.absolutePath);
        if (excluded !== undefined) {
          visit(file, undefined, `references unavailable: ${excluded}`);
          continue;
        }
        const sourceFile = program?.getSourceFile(file.absolutePath);
        visit(file, sourceFile && checker ? { sourceFile, checker } : undefined);
      }
      if (key === INFERRED && program) {
        host.prune(new Set(program.getSourceFiles().map((sf) => sf.fileName)));
      }
    }
  }

  /**
   * Brings a project's Program up to date. A file nested too deep for the
   * parser (even on a worker's large stack) would fail every build of its
   * project, and so every file of it: it is left out and the build retried,
   * on a fresh LanguageService since the failed one may be half updated.
   */
  private build(key: string, first: Project): Built {
    let project = first;
    for (let excluded = 0; ; excluded++) {
      project.host.takeLastRead();
      let program: ts.Program | undefined;
      try {
        program = project.service.getProgram();
      } catch (err) {
        const culprit = project.host.takeLastRead();
        if (!isStackOverflow(err) || culprit === undefined || excluded >= MAX_UNPARSABLE_PER_BUILD || !project.host.excludeUnparsable(culprit)) {
          return { failure: `the type checker could not build this project: ${errorLine(err)}` };
        }
        project.service.dispose();
        project = { host: project.host, service: ts.createLanguageService(project.host, documentRegistry) };
        this.live.set(key, project);
        continue;
      }
      try {
        return { program, checker: program?.getTypeChecker() };
      } catch (err) {
        return { failure: `the type checker failed on this project: ${errorLine(err)}` };
      }
    }
  }

  /** The nearest ancestor tsconfig.json/jsconfig.json whose file list includes the file. */
  projectKeyFor(absolutePath: string): string {
    let dir = path.dirname(absolutePath);
    while (dir === this.workspaceRoot || dir.startsWith(this.workspaceRoot + '/')) {
      if (!isExcludedDir(dir, this.workspaceRoot)) {
        for (const name of CONFIG_NAMES) {
          const configPath = `${dir}/${name}`;
          const parsed = this.parsedConfig(configPath, absolutePath);
          if (parsed?.fileSet.has(absolutePath)) return configPath;
        }
      }
      if (dir === this.workspaceRoot) break;
      dir = path.dirname(dir);
    }
    return INFERRED;
  }

  dispose(): void {
    for (const project of this.live.values()) project.service.dispose();
    this.live.clear();
  }

  private parsedConfig(configPath: string, wanted: string): ParsedConfig | undefined {
    let mtimeMs: number;
    try {
      mtimeMs = fs.statSync(configPath).mtimeMs;
    } catch {
      this.configs.delete(configPath);
      return undefined;
    }
    const cached = this.configs.get(configPath);
    // A file created after the config was parsed is missing from its list:
    // re-read once per request rather than miss it until a restart.
    const stale = cached && (cached.mtimeMs !== mtimeMs || (!cached.fileSet.has(wanted) && cached.generation !== this.generation));
    if (cached && !stale) return cached;
    const parsed = parseConfig(configPath);
    const entry: ParsedConfig = {
      options: parsed.options,
      fileNames: parsed.fileNames,
      fileSet: new Set(parsed.fileNames),
      mtimeMs,
      generation: this.generation,
    };
    this.configs.set(configPath, entry);
    const project = this.live.get(configPath);
    if (project && (cached?.mtimeMs !== mtimeMs)) {
      // Compiler options changed: the LanguageService must be rebuilt.
      project.service.dispose();
      this.live.delete(configPath);
    } else if (project) {
      project.host.setRoots(entry.fileNames);
    }
    return entry;
  }

  private project(key: string): Project {
    const existing = this.live.get(key);
    if (existing) {
      this.live.delete(key);
      this.live.set(key, existing);
      return existing;
    }
    const config = key === INFERRED ? undefined : this.configs.get(key);
    const options = config ? config.options : INFERRED_OPTIONS;
    const directory = config ? path.dirname(key) : this.workspaceRoot;
    const project = openProject(options, directory, this.workspaceRoot, config ? config.fileNames : []);
    this.live.set(key, project);
    while (this.live.size > this.maxPrograms) {
      const [oldestKey, oldest] = this.live.entries().next().value as [string, Project];
      oldest.service.dispose();
      this.live.delete(oldestKey);
    }
    return project;
  }
}

function isExcludedDir(dir: string, root: string): boolean {
  const rel = path.relative(root, dir);
  return rel !== '' && rel.split(path.sep).some((part) => DEFAULT_EXCLUDES.includes(part));
}

function parseConfig(configPath: string): { options: ts.CompilerOptions; fileNames: string[] } {
  const read = ts.readConfigFile(configPath, (file) => ts.sys.readFile(file));
  const isJsConfig = path.basename(configPath) === 'jsconfig.json';
  const parsed = ts.parseJsonConfigFileContent(
    read.config ?? {},
    ts.sys,
    path.dirname(configPath),
    isJsConfig ? JSCONFIG_DEFAULTS : undefined,
    configPath,
  );
  // Analysis never emits and never reports library errors; both only cost time.
  const options: ts.CompilerOptions = { ...parsed.options, noEmit: true, skipLibCheck: true };
  return { options, fileNames: parsed.fileNames.map((f) => path.resolve(f)) };
}
