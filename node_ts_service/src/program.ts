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
    let mtimeMs = 0;
    try {
      mtimeMs = fs.statSync(fileName).mtimeMs;
    } catch {
      return undefined;
    }
    const file: HostFile = { version: 1, text, hash: sha256Hex(Buffer.from(text)), diskMtimeMs: mtimeMs };
    this.files.set(fileName, file);
    return file;
  }

  getProjectVersion(): string {
    return String(this.projectVersion);
  }
  getScriptFileNames(): string[] {
    return this.roots;
  }
  getScriptVersion(fileName: string): string {
    return String(this.load(fileName)?.version ?? 0);
  }
  getScriptSnapshot(fileName: string): ts.IScriptSnapshot | undefined {
    const file = this.load(fileName);
    return file ? ts.ScriptSnapshot.fromString(file.text) : undefined;
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
  readDirectory = ts.sys.readDirectory;
  directoryExists = ts.sys.directoryExists;
  getDirectories = ts.sys.getDirectories;
  realpath = ts.sys.realpath;
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
  withPrograms(files: readonly ProgramFile[], visit: (file: ProgramFile, view: ProgramView | undefined) => void): void {
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
      const program = project.service.getProgram();
      const checker = program?.getTypeChecker();
      for (const file of group) {
        const sourceFile = program?.getSourceFile(file.absolutePath);
        visit(file, sourceFile && checker ? { sourceFile, checker } : undefined);
      }
      if (key === INFERRED && program) {
        project.host.prune(new Set(program.getSourceFiles().map((sf) => sf.fileName)));
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
  const read = ts.readConfigFile(configPath, ts.sys.readFile);
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
