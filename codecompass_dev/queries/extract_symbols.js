#!/usr/bin/env node
// Extracts what the quality benchmark needs from a folder of TS/JS sources,
// with the same TypeScript compiler (6.0.3, from node_ts_service) that the
// analysis service uses, so JSDoc spans and symbol ranges are parsed, not guessed:
//   - the span of every JSDoc comment (/** ... */), found by the scanner so
//     "/**" inside strings, templates and regexes is never mistaken for one;
//   - every named function-like or class symbol with its qualified name, its line
//     range (after any leading JSDoc), its JSDoc description and the messages
//     of the `throw new XError("...")` statements it owns (not nested functions'),
//     and the spans of its own JSDoc comments (so one doc can be blanked alone);
//   - CommonJS assignments named the way the analysis service names them:
//     `X.prototype.y = function` -> "X.y" (method), `exports.x = ` / `module.exports.x = `
//     -> "x", `a.b = function` -> "a.b", `module.exports = function f` -> "f";
//   - the lines of the file's card, the service's `<module top level>` chunk (`card`).
// Output: one JSON object per file on stdout.
// Usage: node codecompass_dev/queries/extract_symbols.js ROOT [ROOT-RELATIVE-FILES...]
// As a module it lends `extract` and its parsing helpers to the training corpus's miners
// (models/corpus/extract_tests.js), so both name symbols by one rule.
'use strict';

const fs = require('node:fs');
const path = require('node:path');

const ts = require(require.resolve('typescript', { paths: [path.join(__dirname, '..', '..', 'node_ts_service')] }));
// Assignment naming (`X.prototype.y = …` → `X.y`) is the analysis service's own, so gold
// names and chunk names agree by construction (built by `make setup`).
const { assignmentTarget } = require(path.join(__dirname, '..', '..', 'node_ts_service', 'dist', 'src', 'symbols.js'));

const SOURCE_EXT = /\.(ts|tsx|mts|cts|js|jsx|mjs|cjs)$/;
const DECLARATION_FILE = /\.d\.(ts|mts|cts)$/;

function scriptKind(file) {
  if (file.endsWith('.tsx')) return ts.ScriptKind.TSX;
  if (file.endsWith('.jsx')) return ts.ScriptKind.JSX;
  if (/\.(js|mjs|cjs)$/.test(file)) return ts.ScriptKind.JS;
  return ts.ScriptKind.TS;
}

function listFiles(root) {
  const out = [];
  const walk = (dir) => {
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
      if (entry.name === 'node_modules') continue;
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(full);
      else if (SOURCE_EXT.test(entry.name) && !DECLARATION_FILE.test(entry.name)) out.push(full);
    }
  };
  walk(root);
  return out.sort();
}

function jsdocSpans(text, kind) {
  // The scanner alone cannot tell a regex from a division, so comments are
  // collected from the parsed tree's trivia instead: every token's leading and
  // trailing comment ranges, deduplicated.
  const sf = ts.createSourceFile('x', text, ts.ScriptTarget.Latest, true, kind);
  const seen = new Set();
  const spans = [];
  const add = (ranges) => {
    for (const r of ranges || []) {
      if (r.kind !== ts.SyntaxKind.MultiLineCommentTrivia || seen.has(r.pos)) continue;
      const body = text.slice(r.pos, r.end);
      if (body.startsWith('/**') && body !== '/**/') {
        seen.add(r.pos);
        spans.push([r.pos, r.end]);
      }
    }
  };
  const visit = (node) => {
    add(ts.getLeadingCommentRanges(text, node.pos));
    add(ts.getTrailingCommentRanges(text, node.end));
    ts.forEachChild(node, visit);
  };
  visit(sf);
  add(ts.getLeadingCommentRanges(text, sf.endOfFileToken.pos));
  spans.sort((a, b) => a[0] - b[0]);
  return { sf, spans: toCodePointOffsets(text, spans) };
}

// Consumers index Python strings (code points), JS offsets count UTF-16 units.
function toCodePointOffsets(text, spans) {
  if (!/[\uD800-\uDBFF]/.test(text)) return spans;
  const cp = new Int32Array(text.length + 1);
  let n = 0;
  for (let i = 0; i < text.length; i++) {
    cp[i] = n;
    const c = text.charCodeAt(i);
    if (c < 0xd800 || c > 0xdbff) n++;
  }
  cp[text.length] = n;
  return spans.map(([a, b]) => [cp[a], cp[b]]);
}

function nameOf(node) {
  const n = node.name;
  if (!n) return undefined;
  if (ts.isIdentifier(n) || ts.isPrivateIdentifier(n) || ts.isStringLiteral(n) || ts.isNumericLiteral(n)) return n.text;
  return undefined;
}

function commentText(comment) {
  if (!comment) return '';
  if (typeof comment === 'string') return comment;
  return comment.map((part) => (part.name ? (part.text || part.name.getText()) : part.text)).join('');
}

function jsdocDescription(node) {
  const docs = node.jsDoc;
  if (!docs || docs.length === 0) return { description: '', deprecated: false };
  const doc = docs[docs.length - 1];
  const deprecated = (doc.tags || []).some((t) => t.tagName && t.tagName.text === 'deprecated');
  return { description: commentText(doc.comment), deprecated };
}

function throwMessages(body) {
  const messages = [];
  const visit = (node) => {
    if (ts.isFunctionLike(node) || ts.isClassLike(node)) return;
    if (ts.isThrowStatement(node) && node.expression && ts.isNewExpression(node.expression)) {
      const arg = node.expression.arguments && node.expression.arguments[0];
      if (arg && (ts.isStringLiteral(arg) || ts.isNoSubstitutionTemplateLiteral(arg))) {
        messages.push({ message: arg.text, error: node.expression.expression.getText() });
      } else if (arg && ts.isTemplateExpression(arg)) {
        messages.push({ message: arg.head.text + '…', error: node.expression.expression.getText(), template: true });
      }
    }
    ts.forEachChild(node, visit);
  };
  if (body) ts.forEachChild(body, visit);
  return messages;
}

function symbolKind(node) {
  if (ts.isClassLike(node)) return 'class';
  if (ts.isMethodDeclaration(node) || ts.isMethodSignature(node)) return 'method';
  if (ts.isConstructorDeclaration(node)) return 'constructor';
  if (ts.isGetAccessor(node) || ts.isSetAccessor(node)) return 'accessor';
  if (ts.isInterfaceDeclaration(node)) return 'interface';
  if (ts.isTypeAliasDeclaration(node)) return 'type';
  if (ts.isEnumDeclaration(node)) return 'enum';
  if (ts.isModuleDeclaration(node)) return 'namespace';
  return 'function';
}

// The node whose range and JSDoc stand for a symbol: for `const f = () => {}` that is
// the variable statement, as the JSDoc sits before `const`.
function declarationFor(node) {
  if (ts.isVariableDeclaration(node) && node.parent && node.parent.parent && ts.isVariableStatement(node.parent.parent)) {
    return node.parent.parent;
  }
  return node;
}

function boundFunction(node) {
  const init = node.initializer;
  if (!init) return undefined;
  let inner = init;
  while (ts.isParenthesizedExpression(inner) || ts.isAsExpression(inner)) inner = inner.expression;
  if (ts.isArrowFunction(inner) || ts.isFunctionExpression(inner) || ts.isClassExpression(inner)) return inner;
  return undefined;
}

// `X.prototype.y = function () {}` and friends, named as node_ts_service/src/symbols.ts
// (assignmentSpec) names them: { name, qualified, kind, fn } or undefined.
function assignmentSymbol(stmt) {
  const expr = stmt.expression;
  if (!ts.isBinaryExpression(expr) || expr.operatorToken.kind !== ts.SyntaxKind.EqualsToken) return undefined;
  const left = expr.left;
  if (!ts.isPropertyAccessExpression(left) && !ts.isElementAccessExpression(left)) return undefined;
  let fn = expr.right;
  while (ts.isParenthesizedExpression(fn) || ts.isAsExpression(fn)) fn = fn.expression;
  if (!ts.isArrowFunction(fn) && !ts.isFunctionExpression(fn) && !ts.isClassExpression(fn)) return undefined;
  const target = assignmentTarget(left);
  if (!target) return undefined;
  let parts = target.parts;
  const kind = target.method ? 'method' : ts.isClassExpression(fn) ? 'class' : 'function';
  if (parts.length === 0) {
    if (!fn.name) return undefined;
    parts = [fn.name.text];
  }
  return { name: parts[parts.length - 1], qualified: parts.join('.'), kind, fn };
}

function ownJsdocSpans(holder) {
  return (holder.jsDoc || []).map((doc) => [doc.getStart(), doc.getEnd()]);
}

function extract(root, file) {
  const text = fs.readFileSync(file, 'utf8').replace(/^\uFEFF/, '');
  const kind = scriptKind(file);
  const { sf, spans } = jsdocSpans(text, kind);
  const rel = path.relative(root, file).split(path.sep).join('/');
  const symbols = [];
  const lineOf = (pos) => sf.getLineAndCharacterOfPosition(pos).line + 1;

  const visit = (node, parents) => {
    let name;
    let fnNode;
    let rangeNode = node;
    let assigned;
    if (ts.isFunctionDeclaration(node) || ts.isClassDeclaration(node) || ts.isMethodDeclaration(node)
      || ts.isGetAccessor(node) || ts.isSetAccessor(node) || ts.isInterfaceDeclaration(node)
      || ts.isTypeAliasDeclaration(node) || ts.isEnumDeclaration(node) || ts.isModuleDeclaration(node)) {
      name = nameOf(node);
      fnNode = node;
    } else if (ts.isConstructorDeclaration(node)) {
      name = 'constructor';
      fnNode = node;
    } else if ((ts.isVariableDeclaration(node) || ts.isPropertyDeclaration(node) || ts.isPropertyAssignment(node))
      && boundFunction(node)) {
      name = nameOf(node);
      fnNode = boundFunction(node);
      rangeNode = ts.isVariableDeclaration(node) ? declarationFor(node) : node;
    } else if (ts.isExpressionStatement(node) && (assigned = assignmentSymbol(node))) {
      name = assigned.name;
      fnNode = assigned.fn;
    }
    if (name !== undefined && fnNode) {
      const docHolder = ts.isVariableDeclaration(node) ? declarationFor(node) : node;
      const { description, deprecated } = jsdocDescription(docHolder);
      const start = rangeNode.getStart(sf, false);
      const body = fnNode.body || (ts.isClassLike(fnNode) ? fnNode : undefined);
      const qualified = [...parents, assigned ? assigned.qualified : name].join('.');
      symbols.push({
        name,
        qualified_name: qualified,
        kind: assigned ? assigned.kind : ts.isClassLike(fnNode) ? 'class' : symbolKind(node),
        start_line: lineOf(start),
        end_line: lineOf(rangeNode.getEnd()),
        has_body: Boolean(fnNode.body) || ts.isClassLike(fnNode) || ts.isInterfaceDeclaration(node)
          || ts.isTypeAliasDeclaration(node) || ts.isEnumDeclaration(node) || ts.isModuleDeclaration(node),
        jsdoc: description,
        deprecated,
        throws: body && !ts.isClassLike(fnNode) ? throwMessages(body) : [],
        jsdoc_spans: toCodePointOffsets(text, ownJsdocSpans(docHolder)),
      });
      ts.forEachChild(node, (child) => visit(child, [...parents, ...qualified.split('.').slice(parents.length)]));
      return;
    }
    ts.forEachChild(node, (child) => visit(child, parents));
  };
  visit(sf, []);
  // The file's card as the analysis service spans it (node_ts_service/src/symbols.ts moduleSymbol,
  // endLineOf): the whole file trimmed of surrounding blank space; a file of comments alone has none.
  const cardStart = text.length - text.trimStart().length;
  const card = sf.statements.length === 0 ? null
    : { start_line: lineOf(cardStart), end_line: lineOf(Math.max(cardStart, text.trimEnd().length - 1)) };
  return { path: rel, line_count: text.split('\n').length, jsdoc_spans: spans, card, symbols };
}

function main() {
  const [root, ...files] = process.argv.slice(2);
  if (!root) {
    process.stderr.write('usage: extract_symbols.js ROOT [FILES...]\n');
    process.exit(2);
  }
  const absRoot = path.resolve(root);
  const targets = files.length ? files.map((f) => path.resolve(absRoot, f)) : listFiles(absRoot);
  for (const file of targets) {
    process.stdout.write(JSON.stringify(extract(absRoot, file)) + '\n');
  }
}

module.exports = { ts, extract, jsdocDescription, ownJsdocSpans, scriptKind, toCodePointOffsets, SOURCE_EXT, DECLARATION_FILE };

if (require.main === module) main();
