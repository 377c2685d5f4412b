// Chunking: every symbol at every depth becomes one chunk by one rule, its
// own source with its body-bearing children collapsed to their signatures.
// Symbol discovery lives in symbols.ts; this module turns symbols into
// chunks (text, lines, imports, references, embedding text, token counts).
import ts from 'typescript';
import { fileCard, firstSentence } from './fileCard';
import { resolveReferences, withoutMachinePaths } from './references';
import {
  discoverSymbols,
  endLineOf,
  hexDigest,
  indentBefore,
  lineOf,
  sourceWithChildren,
  startLineOf,
  textWithoutLongLiterals,
  type FileSymbols,
  type SymbolNode,
} from './symbols';
import { countTokens, countTokensUpTo } from './tokens';
import type { Chunk, Language, SymbolReference } from './types';
import { walkTree } from './walk';

/**
 * Version of the chunk output format. Bump it whenever chunk ids, text or
 * embedding text change for the same input, so indexes built with an older
 * chunker are rebuilt instead of mixing two formats.
 */
export const CHUNKER_VERSION = '7';

export interface ChunkInput {
  absolutePath: string;
  /** Relative to the workspace root, with forward slashes. */
  relativePath: string;
  /** The decoded text `sourceFile` was parsed from; offsets and slices come from `sourceFile.text`. */
  text: string;
  language: Language;
  sourceFile: ts.SourceFile;
  checker?: ts.TypeChecker;
  workspaceRoot: string;
  /** Leave the embedding text empty (ChunkFilesRequest.lexical_only): counting its tokens is a quarter of syntactic chunking. */
  lexicalOnly?: boolean;
}

export interface ChunkOutput {
  chunks: Chunk[];
  diagnostics: string[];
  hasSyntaxErrors: boolean;
}

/**
 * Voyage code-3 accepts 32k tokens per document. The collapsing rule keeps
 * nearly every chunk far below that, but a single enormous function without
 * nested symbols (generated tables, bundler output) has nothing to collapse;
 * its embedding text is cut at a line boundary below this budget so that it
 * can still be embedded. fullSource is never cut (only its long literals of
 * data are shortened, as in every text of a chunk: see longLiterals).
 */
export const EMBEDDING_TOKEN_BUDGET = 30_000;
const MAX_DIAGNOSTICS = 20;

const DISPLAY_LANGUAGE: Record<Language, string> = {
  typescript: 'TypeScript',
  tsx: 'TSX',
  javascript: 'JavaScript',
  jsx: 'JSX',
};

/**
 * Test code by path: a file in a test folder (`__tests__/`, `test/`,
 * `specs/`, `e2e/`, `fixtures/`, `mocks/`, …), a `*.test.*` or `*.spec.*`
 * file, or a file named `test.*`, `tests.*` or `spec.*` (tests kept beside
 * the code as `src/users/test.ts`). Not `mock/` or `testing/`: libraries
 * ship those as product code. The same expression as is_test_path in
 * clients/python/src/codecompass/common/testcode.py, which ranks and selects by
 * it; tests/fixtures/test_paths.json pins both to one table.
 */
const TEST_PATH =
  /(?:^|\/)(?:__tests__|__mocks__|__fixtures__|tests?|specs?|e2e|fixtures?|mocks)(?:\/|$)|\.(?:test|spec)\.[cm]?[jt]sx?$|(?:^|\/)(?:tests?|spec)\.[cm]?[jt]sx?$/;

export function isTestPath(relativePath: string): boolean {
  return TEST_PATH.test(relativePath.replace(/\\/g, '/'));
}

/**
 * The id the chunker gives the chunk declared by `decl` (any of its
 * declaration nodes: overloads, the variable of a bound function, …), or ''
 * when `decl` is not a chunk.
 */
export function chunkIdForDeclaration(decl: ts.Node, relativePath: string): string {
  return discoverSymbols(decl.getSourceFile(), relativePath).byNode.get(decl)?.id ?? '';
}

interface FileImport {
  statement: string;
  moduleSpecifier: string;
  names: string[];
}

function importsOf(sf: ts.SourceFile): FileImport[] {
  const imports: FileImport[] = [];
  const text = sf.text;
  for (const stmt of sf.statements) {
    const statement = text.slice(stmt.getStart(sf), stmt.end).trim();
    if (ts.isImportDeclaration(stmt) && ts.isStringLiteral(stmt.moduleSpecifier)) {
      const names: string[] = [];
      const clause = stmt.importClause;
      if (clause?.name) names.push(clause.name.text);
      const bindings = clause?.namedBindings;
      if (bindings && ts.isNamespaceImport(bindings)) names.push(bindings.name.text);
      if (bindings && ts.isNamedImports(bindings)) for (const el of bindings.elements) names.push(el.name.text);
      imports.push({ statement, moduleSpecifier: stmt.moduleSpecifier.text, names });
    } else if (ts.isImportEqualsDeclaration(stmt) && ts.isExternalModuleReference(stmt.moduleReference)) {
      const ref = stmt.moduleReference.expression;
      imports.push({ statement, moduleSpecifier: ts.isStringLiteral(ref) ? ref.text : '', names: [stmt.name.text] });
    } else if (ts.isVariableStatement(stmt)) {
      for (const decl of stmt.declarationList.declarations) {
        const spec = requiredModule(decl.initializer);
        if (spec === undefined) continue;
        const names: string[] = [];
        collectBindingNames(decl.name, names);
        imports.push({ statement, moduleSpecifier: spec, names });
      }
    }
  }
  return imports;
}

function requiredModule(init: ts.Expression | undefined): string | undefined {
  let e = init;
  while (e && (ts.isPropertyAccessExpression(e) || ts.isParenthesizedExpression(e))) e = e.expression;
  if (!e || !ts.isCallExpression(e) || !ts.isIdentifier(e.expression) || e.expression.text !== 'require') return undefined;
  const arg = e.arguments[0];
  return arg && ts.isStringLiteralLike(arg) ? arg.text : undefined;
}

function collectBindingNames(name: ts.BindingName, out: string[]): void {
  // A stack, not recursion: a destructuring pattern can nest as deep as any literal.
  const pending: ts.BindingName[] = [name];
  while (pending.length > 0) {
    const next = pending.pop()!;
    if (ts.isIdentifier(next)) {
      out.push(next.text);
      continue;
    }
    for (let i = next.elements.length - 1; i >= 0; i--) {
      const element = next.elements[i];
      if (!ts.isOmittedExpression(element)) pending.push(element.name);
    }
  }
}

/** An identifier that names something in scope, as opposed to a property key or member name. */
export function isValueUse(id: ts.Identifier): boolean {
  const p = id.parent;
  if (!p) return true;
  if ((ts.isPropertyAccessExpression(p) || ts.isQualifiedName(p)) && (p as ts.PropertyAccessExpression).name === id) {
    return false;
  }
  if (ts.isQualifiedName(p) && p.right === id) return false;
  if (
    (ts.isPropertyAssignment(p) ||
      ts.isMethodDeclaration(p) ||
      ts.isPropertyDeclaration(p) ||
      ts.isPropertySignature(p) ||
      ts.isMethodSignature(p) ||
      ts.isGetAccessor(p) ||
      ts.isSetAccessor(p) ||
      ts.isEnumMember(p)) &&
    p.name === id
  ) {
    return false;
  }
  return !ts.isJsxAttribute(p);
}

/** Positions of identifier uses of the imported names, per name, in source order. */
function importUses(sf: ts.SourceFile, imports: FileImport[]): Map<string, number[]> {
  const uses = new Map<string, number[]>();
  for (const imp of imports) for (const n of imp.names) uses.set(n, []);
  if (uses.size === 0) return uses;
  const visit = (node: ts.Node): boolean => {
    if (!ts.isIdentifier(node)) return true;
    const list = uses.get(node.text);
    if (list && isValueUse(node)) list.push(node.getStart(sf));
    return false;
  };
  // Import statements are top-level statements: skipping them there spares a set lookup per node.
  for (const stmt of sf.statements) {
    if (!ts.isImportDeclaration(stmt) && !ts.isImportEqualsDeclaration(stmt)) walkTree(stmt, visit);
  }
  walkTree(sf.endOfFileToken, visit);
  return uses;
}

function anyWithin(sorted: number[], start: number, end: number): boolean {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (sorted[mid] < start) lo = mid + 1;
    else hi = mid;
  }
  return lo < sorted.length && sorted[lo] < end;
}

/** First sentence of a JSDoc block, without comment markers and tags. */
export function jsdocPurpose(jsdoc: string): string {
  const body = jsdoc
    .replace(/^\/\*\*/, '')
    .replace(/\*\/$/, '')
    .split(/\r?\n/)
    .map((l) => l.replace(/^\s*\*?\s?/, ''));
  const prose: string[] = [];
  for (const line of body) {
    if (/^\s*@/.test(line)) break;
    if (line.trim() === '' && prose.length > 0) break;
    if (line.trim() !== '') prose.push(line.trim());
  }
  return firstSentence(prose.join(' '));
}

function breadcrumb(sym: SymbolNode): string[] {
  const names: string[] = [];
  // Scope wrappers (top-level IIFEs) stay out, as they do from qualified names.
  for (let s: SymbolNode | undefined = sym; s; s = s.parent) if (s === sym || !s.transparent) names.unshift(s.localName);
  return names;
}

export function embeddingPreamble(
  language: Language,
  relativePath: string,
  sym: SymbolNode,
  purpose: string,
  dependencies: string[],
  references: SymbolReference[],
  cardLines: string[] = [],
): string {
  const lines = [`[${DISPLAY_LANGUAGE[language]}] ${[relativePath, ...breadcrumb(sym)].join(' > ')}`];
  if (purpose) lines.push(`Purpose: ${purpose}`);
  lines.push(`Signature: ${sym.signature}`);
  lines.push(...cardLines);
  if (dependencies.length > 0) lines.push(`Dependencies: ${dependencies.join(', ')}`);
  if (references.length > 0) {
    lines.push('', 'Referenced symbols:');
    for (const r of references) lines.push(`- ${r.name}: ${r.signature}`);
  }
  lines.push('', '---', '');
  return lines.join('\n');
}

/** Embedding text within the token budget, and its exact token count. */
function fitEmbedding(preamble: string, source: string): { text: string; tokens: number } {
  const full = preamble + source;
  // Counting stops at the budget: a bundle's IIFE or module chunk collapses to
  // hundreds of thousands of characters, and only the part that fits is needed.
  const tokens = countTokensUpTo(full, EMBEDDING_TOKEN_BUDGET);
  if (tokens <= EMBEDDING_TOKEN_BUDGET) return { text: full, tokens };
  // Cut at a line boundary. Lines are measured only as far as the budget
  // reaches, and each once however often the budget is tightened; a line
  // costs what `${line}\n` counts, as if the source were split on '\n'.
  let lineCount = 1;
  for (let nl = source.indexOf('\n'); nl >= 0; nl = source.indexOf('\n', nl + 1)) lineCount++;
  const lineStarts = [0];
  const lineCosts: number[] = [];
  let budget = EMBEDDING_TOKEN_BUDGET - countTokens(preamble) - 50;
  for (;;) {
    let used = 0;
    let keep = 0;
    while (keep < lineCount) {
      if (keep === lineCosts.length) {
        const from = lineStarts[keep];
        const nl = source.indexOf('\n', from);
        lineCosts.push(countTokens(nl < 0 ? `${source.slice(from)}\n` : source.slice(from, nl + 1)));
        lineStarts.push(nl < 0 ? source.length + 1 : nl + 1);
      }
      const cost = lineCosts[keep];
      if (used + cost > budget) break;
      used += cost;
      keep++;
    }
    // The first `keep` lines joined with '\n': the source up to the newline that ends line keep - 1.
    const kept = keep === 0 ? '' : source.slice(0, lineStarts[keep] - 1);
    const text = `${preamble}${kept}\n/* … ${lineCount - keep} lines truncated for embedding */`;
    const count = countTokens(text);
    if (count <= EMBEDDING_TOKEN_BUDGET || keep === 0) return { text, tokens: count };
    budget -= count - EMBEDDING_TOKEN_BUDGET + 100;
  }
}

function sha(text: string): string {
  return hexDigest('sha256', text).slice(0, 24);
}

function syntaxDiagnostics(sf: ts.SourceFile): ts.DiagnosticWithLocation[] {
  // parseDiagnostics is internal API, but it is exactly the parser's own
  // error list; the public getSyntacticDiagnostics needs a Program, which
  // purely syntactic chunking does not have.
  return (sf as unknown as { parseDiagnostics?: ts.DiagnosticWithLocation[] }).parseDiagnostics ?? [];
}

const SCRIPT_KIND: Record<Language, ts.ScriptKind> = {
  typescript: ts.ScriptKind.TS,
  tsx: ts.ScriptKind.TSX,
  javascript: ts.ScriptKind.JS,
  jsx: ts.ScriptKind.JSX,
};

/** One file's text as the chunker needs it. */
export interface ChunkText {
  absolutePath: string;
  relativePath: string;
  text: string;
  language: Language;
}

/**
 * Chunks a file as part of a Program (its SourceFile, and the checker for
 * references) when one is given, else parsed on its own without references.
 */
export function chunkText(
  file: ChunkText,
  workspaceRoot: string,
  program?: { sourceFile: ts.SourceFile; checker: ts.TypeChecker },
  lexicalOnly = false,
): ChunkOutput {
  const sourceFile =
    program?.sourceFile ?? ts.createSourceFile(file.absolutePath, file.text, ts.ScriptTarget.Latest, true, SCRIPT_KIND[file.language]);
  return chunkSourceFile({ ...file, sourceFile, checker: lexicalOnly ? undefined : program?.checker, workspaceRoot, lexicalOnly });
}

/**
 * Chunks a small sample on this thread, so that the parser, the chunker and the tokenizer are
 * loaded and compiled before a request needs them (the service's warm-up; the compile cache's
 * priming). Throws when the sample yields no chunk or no tokens.
 */
export function warmChunker(): void {
  const text = '/** Greets. */\nexport function greet(name: string): string {\n  return `hi ${name}`;\n}\n';
  const out = chunkText({ absolutePath: '/warmup/warmup.ts', relativePath: 'warmup.ts', text, language: 'typescript' }, '/warmup');
  if (out.chunks.length === 0 || countTokens(out.chunks[0].embeddingText) === 0) {
    throw new Error('warm-up chunking produced no chunks');
  }
}

export function chunkSourceFile(input: ChunkInput): ChunkOutput {
  const sf = input.sourceFile;
  const text = sf.text;
  const parseErrors = syntaxDiagnostics(sf);
  const diagnostics = parseErrors.slice(0, MAX_DIAGNOSTICS).map((d) => {
    const { line, character } = sf.getLineAndCharacterOfPosition(d.start);
    return `${line + 1}:${character + 1} ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`;
  });
  const symbols: FileSymbols = discoverSymbols(sf, input.relativePath);
  const imports = importsOf(sf);
  const uses = importUses(sf, imports);
  const isTestFile = isTestPath(input.relativePath);
  const purposeOf = (sym: SymbolNode): string => (sym.jsdocStart >= 0 ? jsdocPurpose(text.slice(sym.jsdocStart, sym.jsdocEnd)) : '');
  const card =
    symbols.module && !input.lexicalOnly ? fileCard(sf, [...symbols.roots].sort((a, b) => a.start - b.start), purposeOf) : undefined;
  const chunks: Chunk[] = [];
  let checker = input.checker;
  for (const sym of symbols.all) {
    const fullSource = textWithoutLongLiterals(sf, sym.start, sym.end);
    const collapsedSource = sourceWithChildren(sf, sym);
    const relevant = imports.filter((imp) => imp.names.some((n) => anyWithin(uses.get(n) ?? [], sym.start, sym.end)));
    const dependencies = [...new Set(relevant.map((imp) => imp.moduleSpecifier).filter((m) => m !== ''))];
    const jsdoc = sym.jsdocStart >= 0 ? text.slice(sym.jsdocStart, sym.jsdocEnd) : '';
    let references: SymbolReference[] = [];
    if (checker) {
      try {
        references = resolveReferences(sym, {
          checker,
          sourceFile: sf,
          relativePath: input.relativePath,
          workspaceRoot: input.workspaceRoot,
        });
      } catch (err) {
        // The checker can exhaust the stack inferring types deep inside huge
        // untyped JavaScript. Its state is not trustworthy after that, so the
        // rest of the file is chunked without references, and the file says so.
        checker = undefined;
        const message = err instanceof Error ? err.message : String(err);
        diagnostics.push(
          `${startLineOf(sf, sym)}:1 references unavailable from here on: ${withoutMachinePaths(message, input.workspaceRoot)}`,
        );
      }
    }
    const isCard = sym === symbols.module && card !== undefined;
    const embedding = input.lexicalOnly
      ? { text: '', tokens: 0 }
      : fitEmbedding(
          embeddingPreamble(
            input.language,
            input.relativePath,
            sym,
            isCard ? card.purpose : jsdocPurpose(jsdoc),
            dependencies,
            references,
            isCard ? card.lines : [],
          ),
          collapsedSource,
        );
    chunks.push({
      id: sym.id,
      snippetHash: sha(fullSource),
      relativePath: input.relativePath,
      language: input.language,
      nodeKind: sym.kind,
      name: sym.name,
      qualifiedName: sym.qualifiedName,
      parentId: sym.parent ? sym.parent.id : '',
      childIds: sym.children.map((c) => c.id),
      depth: sym.depth,
      signature: sym.signature,
      fullSource,
      collapsedSource,
      startLine: startLineOf(sf, sym),
      endLine: endLineOf(sf, sym),
      jsdoc,
      jsdocStartLine: sym.jsdocStart >= 0 ? lineOf(sf, sym.jsdocStart) : 0,
      relevantImports: relevant.map((imp) => imp.statement),
      isTest: isTestFile || sym.inTestBlock,
      embeddingText: embedding.text,
      references,
      embeddingTokenCount: embedding.tokens,
      indent: indentBefore(text, sym.start),
    });
  }
  return { chunks, diagnostics, hasSyntaxErrors: parseErrors.length > 0 };
}

export interface LineCoverage {
  /** Non-blank lines, comment lines included. */
  lines: number;
  /** Of those, lines inside some chunk's [jsdocStartLine or startLine, endLine]. */
  covered: number;
  /** Non-blank lines that are not only comment (a shebang counts as comment). */
  codeLines: number;
  codeCovered: number;
  /** Code lines covered by a symbol chunk, the module chunk left out: how much has a chunk of its own. */
  codeCoveredBySymbols: number;
}

/**
 * Which lines of a file the chunks cover. Blank lines never count; comment
 * lines count in `lines` (honest: a license header outside every chunk is
 * uncovered) and are left out of `codeLines`. A line is a comment line when,
 * trimmed, it starts with `//` or lies in a block comment opened at the start
 * of a line, up to a closing `*\/` with nothing after it; comment markers
 * inside strings are not told apart, which only matters for lines that start
 * inside a multi-line template literal. bench/lib/chunk_checks.py
 * (line_coverage) computes the same for the gRPC benchmark.
 */
export function lineCoverage(
  text: string,
  chunks: Pick<Chunk, 'startLine' | 'endLine' | 'jsdocStartLine' | 'nodeKind'>[],
): LineCoverage {
  const lines = text.split('\n');
  const all = new Int32Array(lines.length + 2);
  const symbols = new Int32Array(lines.length + 2);
  for (const c of chunks) {
    const from = c.jsdocStartLine > 0 ? c.jsdocStartLine : c.startLine;
    const marks = c.nodeKind === 'module' ? [all] : [all, symbols];
    for (const m of marks) {
      m[from] += 1;
      m[c.endLine + 1] -= 1;
    }
  }
  const result: LineCoverage = { lines: 0, covered: 0, codeLines: 0, codeCovered: 0, codeCoveredBySymbols: 0 };
  let inAll = 0;
  let inSymbols = 0;
  let inBlock = false;
  for (let i = 0; i < lines.length; i++) {
    inAll += all[i + 1];
    inSymbols += symbols[i + 1];
    const t = lines[i].trim();
    if (t === '') continue;
    let comment = false;
    if (inBlock || t.startsWith('/*')) {
      const close = t.indexOf('*/', inBlock ? 0 : 2);
      inBlock = close < 0;
      comment = inBlock || t.slice(close + 2).trim() === '';
    } else if (t.startsWith('//') || (i === 0 && t.startsWith('#!'))) {
      comment = true;
    }
    result.lines++;
    if (inAll > 0) result.covered++;
    if (comment) continue;
    result.codeLines++;
    if (inAll > 0) result.codeCovered++;
    if (inSymbols > 0) result.codeCoveredBySymbols++;
  }
  return result;
}
