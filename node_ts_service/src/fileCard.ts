// The file card: what the module chunk says about its file beyond its own
// text (the outline). A question about how a part of a system works is
// answered by a file or a few files; the card is the file's candidate, and
// these lines are what its embedding and its lexical text know of it: the
// purpose its header comment states (or its main export's, when it has no
// header), the names it exports and the modules it re-exports.
import ts from 'typescript';
import type { SymbolNode } from './symbols';

/** Licence banners, authorship lines and editor modelines: never a file's purpose. */
const LICENCE = /licen[cs]e|copyright|\(c\)|©|spdx|all rights reserved|^\s*(?:original )?authors?:|-\*-/im;
/** Tool directives (linters, type checkers, coverage, bundlers, test environments). */
const DIRECTIVE =
  /^\s*(?:eslint|@ts-|prettier-|istanbul|jshint|jslint|globals?\b|@flow|#region|#endregion|tslint|c8\b|biome-|@jsx|@jest-environment|@vitest-environment|@vite-ignore|webpack|@refresh|<reference|@preserve|!)/i;
/** JSDoc tags whose text describes the file; any other tag ends the prose (the corpus's header rule's set). */
const DESCRIPTIVE_TAGS = new Set(['file', 'fileoverview', 'overview', 'description', 'desc']);
/** Names an Exports line lists at most: a barrel of 500 exports says what it is in far fewer. */
const MAX_CARD_NAMES = 40;
const PURPOSE_LIMIT = 300;
const BLANK_LINE = /\n[ \t]*\r?\n/;

export interface FileHeader {
  start: number;
  end: number;
  /**
   * The comment sits directly on the file's first declaration (no blank line
   * between): it documents that declaration, not the file.
   */
  attached: boolean;
}

function isRequireCall(node: ts.Node): boolean {
  return ts.isCallExpression(node) && ts.isIdentifier(node.expression) && node.expression.text === 'require';
}

/**
 * The file's first leading comment that is neither a licence banner nor a
 * tool directive (consecutive `//` lines are one comment). The training
 * corpus mines file headers by this same rule (models/corpus/extract_tests.js),
 * so what the index calls a file's purpose is what the ranker learned from.
 */
export function fileHeader(sf: ts.SourceFile): FileHeader | undefined {
  const text = sf.text;
  const groups: { start: number; end: number; single: boolean }[] = [];
  for (const r of ts.getLeadingCommentRanges(text, 0) ?? []) {
    const last = groups[groups.length - 1];
    const single = r.kind === ts.SyntaxKind.SingleLineCommentTrivia;
    if (last && single && last.single && !BLANK_LINE.test(text.slice(last.end, r.pos))) last.end = r.end;
    else groups.push({ start: r.pos, end: r.end, single });
  }
  const chosen = groups.find((g) => {
    const body = text.slice(g.start, g.end).replace(/^\/\*+!?|\*+\/$|^\s*\/\/+|^\s*\*+/gm, ' ');
    return body.trim() !== '' && !LICENCE.test(body) && !DIRECTIVE.test(body);
  });
  if (!chosen) return undefined;
  const first = sf.statements[0];
  const declares =
    first !== undefined &&
    !ts.isImportDeclaration(first) &&
    !ts.isImportEqualsDeclaration(first) &&
    !(ts.isExpressionStatement(first) && (ts.isStringLiteral(first.expression) || isRequireCall(first.expression))) &&
    !(ts.isVariableStatement(first) && first.declarationList.declarations.every((d) => d.initializer && isRequireCall(d.initializer)));
  const between = first ? text.slice(chosen.end, first.getStart(sf)) : '\n\n';
  const isLast = chosen === groups[groups.length - 1];
  return { start: chosen.start, end: chosen.end, attached: Boolean(declares && isLast && !BLANK_LINE.test(between)) };
}

/** The first sentence of a paragraph, at most PURPOSE_LIMIT characters. */
export function firstSentence(paragraph: string): string {
  const m = /^(.+?[.!?])(\s|$)/.exec(paragraph);
  const sentence = m ? m[1] : paragraph;
  return sentence.length > PURPOSE_LIMIT ? `${sentence.slice(0, PURPOSE_LIMIT - 1)}…` : sentence;
}

/**
 * The first sentence of a comment's prose, `//` and block comments alike:
 * markers stripped, and JSDoc tags dropped except the text of a descriptive
 * one (`@file`, `@fileoverview`, `@description`, …).
 */
export function commentPurpose(comment: string): string {
  const lines = comment
    .replace(/^\/\*+!?/, '')
    .replace(/\*+\/$/, '')
    .split(/\r?\n/)
    .map((line) => line.replace(/^\s*(?:\/\/+|\*+)?\s?/, '').trim());
  const prose: string[] = [];
  for (const line of lines) {
    const tag = /^@(\w+)\s*(.*)$/.exec(line);
    if (tag) {
      if (!DESCRIPTIVE_TAGS.has(tag[1].toLowerCase())) break;
      if (tag[2]) prose.push(tag[2]);
      continue;
    }
    if (line === '') {
      if (prose.length > 0) break;
      continue;
    }
    prose.push(line);
  }
  return firstSentence(prose.join(' '));
}

function statementOf(node: ts.Node): ts.Node {
  let n = node;
  while (n.parent && !ts.isSourceFile(n.parent)) n = n.parent;
  return n;
}

function hasExportModifier(node: ts.Node): boolean {
  return ts.canHaveModifiers(node) && (ts.getModifiers(node) ?? []).some((m) => m.kind === ts.SyntaxKind.ExportKeyword);
}

function isCommonJsExport(statement: ts.Node): boolean {
  if (!ts.isExpressionStatement(statement) || !ts.isBinaryExpression(statement.expression)) return false;
  const target = statement.expression.left.getText();
  return target === 'module.exports' || target.startsWith('module.exports.') || target.startsWith('exports.');
}

/**
 * Local names a file exports by reference rather than at their declaration:
 * `export { a, b as c }`, `export default a`, `module.exports = a` and
 * `module.exports = { a, b: c }`.
 */
function exportedByName(sf: ts.SourceFile): Set<string> {
  const names = new Set<string>();
  const add = (e: ts.Expression | undefined) => {
    if (e && ts.isIdentifier(e)) names.add(e.text);
  };
  for (const stmt of sf.statements) {
    if (ts.isExportDeclaration(stmt) && !stmt.moduleSpecifier && stmt.exportClause && ts.isNamedExports(stmt.exportClause)) {
      for (const el of stmt.exportClause.elements) names.add((el.propertyName ?? el.name).text);
    } else if (ts.isExportAssignment(stmt)) {
      add(stmt.expression);
    } else if (isCommonJsExport(stmt)) {
      const value = ((stmt as ts.ExpressionStatement).expression as ts.BinaryExpression).right;
      add(value);
      if (ts.isObjectLiteralExpression(value)) {
        for (const p of value.properties) {
          if (ts.isShorthandPropertyAssignment(p)) names.add(p.name.text);
          else if (ts.isPropertyAssignment(p)) add(p.initializer);
        }
      }
    }
  }
  return names;
}

/** A top-level symbol its file exports: at its declaration (ES `export`, a CommonJS export assignment) or by name. */
function isExported(sym: SymbolNode, byName: Set<string>): boolean {
  const node = sym.nodes[0];
  if (!node) return false;
  const statement = statementOf(node);
  return hasExportModifier(statement) || ts.isExportAssignment(statement) || isCommonJsExport(statement) || byName.has(sym.name);
}

/** Modules a file re-exports (`export * from './x'`, `export { a } from './y'`), in order. */
export function reexportedModules(sf: ts.SourceFile): string[] {
  const out: string[] = [];
  for (const stmt of sf.statements) {
    if (ts.isExportDeclaration(stmt) && stmt.moduleSpecifier && ts.isStringLiteral(stmt.moduleSpecifier)) {
      if (!out.includes(stmt.moduleSpecifier.text)) out.push(stmt.moduleSpecifier.text);
    }
  }
  return out;
}

export interface FileCard {
  /** The header comment's first sentence, else the first exported symbol's JSDoc purpose. */
  purpose: string;
  /** Extra preamble lines of the card's embedding text: Exports, Re-exports. */
  lines: string[];
}

/**
 * What the card says of its file. `roots` are the file's top-level symbols in
 * source order; `symbolPurpose` gives a symbol's own JSDoc purpose ('' when
 * it has none).
 */
export function fileCard(sf: ts.SourceFile, roots: SymbolNode[], symbolPurpose: (sym: SymbolNode) => string): FileCard {
  const header = fileHeader(sf);
  let purpose = header && !header.attached ? commentPurpose(sf.text.slice(header.start, header.end)) : '';
  const byName = exportedByName(sf);
  const exported = roots.filter((sym) => isExported(sym, byName));
  if (purpose === '') {
    // No header: the file is mostly about what it exports first with a doc comment.
    for (const sym of [...exported, ...roots]) {
      purpose = symbolPurpose(sym);
      if (purpose !== '') break;
    }
  }
  const lines: string[] = [];
  const names = [...new Set(exported.map((s) => s.name))];
  if (names.length > 0) {
    const more = names.length > MAX_CARD_NAMES ? ` (+${names.length - MAX_CARD_NAMES} more)` : '';
    lines.push(`Exports: ${names.slice(0, MAX_CARD_NAMES).join(', ')}${more}`);
  }
  const reexports = reexportedModules(sf);
  if (reexports.length > 0) lines.push(`Re-exports: ${reexports.slice(0, MAX_CARD_NAMES).join(', ')}`);
  return { purpose, lines };
}
