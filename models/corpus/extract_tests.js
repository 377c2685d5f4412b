#!/usr/bin/env node
// What the training corpus's test-title and file-header rules need from a repository,
// parsed by the same TypeScript compiler (and symbol naming) as codecompass_dev/queries/extract_symbols.js.
//
// Input (stdin, JSON): { root, tests: [rel...], sources: [rel...], packages: [npm names...] }
//   tests    test files (by the product's test-path rule), whose test cases are read;
//   sources  the repository's non-test source files: call targets and file headers come from them;
//   packages the repository's own package names (a test importing 'ky' imports the repository).
// Output (stdout, one JSON object a line):
//   { type: "test", path, title, describe: [...], title_span: [s, e], line, calls: [...], ambiguous: [...],
//     unnamed: [...], helpers: [...], large_classes: [...] }
//     calls: the distinct non-test symbols the test body calls (`f()`, `x.f()`, `new F()`), each
//     { path, qualified_name, start_line, end_line, name, how }, `how` being "checker" (the
//     compiler resolved the callee through imports to its declaration) or "name" (the compiler
//     could not, the callee is bound to an import of the repository's own code, and exactly one
//     non-test symbol has that name); ambiguous: callee names that resolve to several symbols;
//     unnamed: calls into the repository's code that land on no named symbol (`ky.get()`);
//     helpers: callees declared in test code (assertion and set-up helpers: not the code under
//     test, and no reason to drop the test); large_classes: `new F()` of a class longer than
//     SMALL_CLASS_LINES without a constructor of its own (constructing it says nothing about
//     which of its many members the test is about). `new F()` of a class with a constructor
//     calls that constructor: the target is the constructor, named as the service names it.
//   { type: "header", path, text, span: [s, e], attached } for a source file's leading comment
//     that is neither a licence banner nor a tool directive; `attached` when it sits directly on
//     the file's first declaration (then it documents that declaration, not the file).
//   { type: "declarations", path, exported: [...], variables: [...] } for every source file: the
//     module-scope names it exports (`export` modifiers, `export { a }`, `export default a`,
//     `module.exports = { a }`, `exports.a = a`), and its module-scope variables with a JSDoc
//     ({ name, start_line, end_line, jsdoc, jsdoc_spans }, named and ranged as the analysis
//     service chunks them: the statement, JSDoc excluded), which extract_symbols.js does not list.
'use strict';

const fs = require('node:fs');
const path = require('node:path');
const { ts, extract, jsdocDescription, ownJsdocSpans, scriptKind, toCodePointOffsets } = require('../../codecompass_dev/queries/extract_symbols.js');
const { fileHeader } = require(path.join(__dirname, '..', '..', 'node_ts_service', 'dist', 'src', 'fileCard.js'));

const TEST_CALLEES = new Set(['it', 'test', 'specify']);
const SUITE_CALLEES = new Set(['describe', 'context', 'suite']);
const TEST_MODIFIERS = new Set(['only', 'skip', 'serial', 'concurrent', 'failing', 'sequential']);
// A class without its own constructor is a target of `new F()` only when it is about a function's size.
const SMALL_CLASS_LINES = 60;

function calleeKind(expr, names) {
  // `it(...)`, `it.only(...)`, `test.serial.skip(...)`: the base name decides.
  let node = expr;
  while (ts.isPropertyAccessExpression(node)) {
    if (!TEST_MODIFIERS.has(node.name.text)) return false;
    node = node.expression;
  }
  return ts.isIdentifier(node) && names.has(node.text);
}

function titleOf(call) {
  const arg = call.arguments[0];
  if (arg && (ts.isStringLiteral(arg) || ts.isNoSubstitutionTemplateLiteral(arg))) return arg;
  return undefined;
}

function bodyOf(call) {
  for (let i = call.arguments.length - 1; i > 0; i--) {
    const arg = call.arguments[i];
    if (ts.isArrowFunction(arg) || ts.isFunctionExpression(arg)) return arg;
  }
  return undefined;
}

class Repository {
  constructor(root, sources, tests, packages) {
    this.root = root;
    this.sources = new Set(sources);
    this.tests = new Set(tests);
    this.packages = new Set(packages);
    this.symbolsByFile = new Map();
    this.byName = undefined;
  }

  rel(fileName) {
    return path.relative(this.root, fileName).split(path.sep).join('/');
  }

  symbols(rel) {
    if (!this.symbolsByFile.has(rel)) this.symbolsByFile.set(rel, extract(this.root, path.join(this.root, rel)).symbols);
    return this.symbolsByFile.get(rel);
  }

  // Every non-test symbol by its simple name, for the by-name fallback.
  named(name) {
    if (!this.byName) {
      this.byName = new Map();
      for (const rel of this.sources) {
        for (const s of this.symbols(rel)) {
          if (!this.byName.has(s.name)) this.byName.set(s.name, []);
          this.byName.get(s.name).push({ rel, symbol: s });
        }
      }
    }
    return this.byName.get(name) || [];
  }

  // `require('./helpers')` from a test: a module of test code, not the repository's own code.
  testModule(fromRel, specifier) {
    if (!specifier.startsWith('.')) return false;
    const base = path.posix.normalize(path.posix.join(path.posix.dirname(fromRel), specifier));
    const exts = ['', '.ts', '.tsx', '.mts', '.cts', '.js', '.jsx', '.mjs', '.cjs'];
    const candidates = [...exts.map((e) => base + e), ...exts.slice(1).map((e) => `${base}/index${e}`)];
    return candidates.some((c) => this.tests.has(c));
  }

  ownModule(specifier, fromRel) {
    if (specifier.startsWith('.')) return !this.testModule(fromRel, specifier);
    for (const name of this.packages) if (specifier === name || specifier.startsWith(name + '/')) return true;
    return false;
  }
}

// The symbol (as extract_symbols.js names it) that a declaration node declares, or undefined.
function symbolOfDeclaration(repo, decl) {
  const sf = decl.getSourceFile();
  const rel = repo.rel(sf.fileName);
  if (!repo.sources.has(rel)) return undefined;
  const name = decl.name && (ts.isIdentifier(decl.name) || ts.isPrivateIdentifier(decl.name)) ? decl.name.text : undefined;
  const line = sf.getLineAndCharacterOfPosition(decl.getStart(sf)).line + 1;
  const holders = repo.symbols(rel).filter((s) => s.start_line <= line && line <= s.end_line
    && (name === undefined ? ts.isConstructorDeclaration(decl) && s.name === 'constructor' : s.name === name));
  if (holders.length === 0) return undefined;
  const best = holders.reduce((a, b) => (b.end_line - b.start_line < a.end_line - a.start_line ? b : a));
  return { rel, symbol: best };
}

// Names a test file binds to the repository's own modules: `import x from '../src'`,
// `import { a } from 'pkg'`, `const x = require('..')`, `const { a } = require('../lib')`.
function ownBindings(repo, sf) {
  const names = new Set();
  const rel = repo.rel(sf.fileName);
  const visit = (node) => {
    if (ts.isImportDeclaration(node) && ts.isStringLiteral(node.moduleSpecifier) && repo.ownModule(node.moduleSpecifier.text, rel)) {
      const clause = node.importClause;
      if (clause && clause.name) names.add(clause.name.text);
      const bindings = clause && clause.namedBindings;
      if (bindings && ts.isNamespaceImport(bindings)) names.add(bindings.name.text);
      if (bindings && ts.isNamedImports(bindings)) for (const el of bindings.elements) names.add(el.name.text);
    } else if (ts.isVariableDeclaration(node) && node.initializer && ts.isCallExpression(node.initializer)
      && ts.isIdentifier(node.initializer.expression) && node.initializer.expression.text === 'require') {
      const arg = node.initializer.arguments[0];
      if (arg && ts.isStringLiteral(arg) && repo.ownModule(arg.text, rel)) {
        if (ts.isIdentifier(node.name)) names.add(node.name.text);
        else if (ts.isObjectBindingPattern(node.name)) {
          for (const el of node.name.elements) if (ts.isIdentifier(el.name)) names.add(el.name.text);
        }
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return names;
}

function rootIdentifier(expr) {
  let node = expr;
  while (ts.isPropertyAccessExpression(node) || ts.isCallExpression(node) || ts.isElementAccessExpression(node)) {
    node = node.expression;
  }
  return ts.isIdentifier(node) ? node.text : undefined;
}

function declarationsOf(checker, nameNode) {
  let sym = checker.getSymbolAtLocation(nameNode);
  if (sym && sym.flags & ts.SymbolFlags.Alias) sym = checker.getAliasedSymbol(sym);
  return (sym && sym.declarations) || [];
}

function resolveCall(repo, checker, callee, bindings) {
  const nameNode = ts.isPropertyAccessExpression(callee) ? callee.name : ts.isIdentifier(callee) ? callee : undefined;
  if (!nameNode) return { found: [], unnamed: false };
  const found = new Map();
  let inSources = false;
  let inTests = false;
  const take = (decls, how) => {
    for (const decl of decls) {
      const hit = symbolOfDeclaration(repo, decl);
      const declared = repo.rel(decl.getSourceFile().fileName);
      if (repo.sources.has(declared)) inSources = true;
      if (repo.tests.has(declared)) inTests = true;
      if (hit) found.set(`${hit.rel}\u0000${hit.symbol.qualified_name}`, { ...hit, how });
    }
  };
  take(declarationsOf(checker, nameNode), 'checker');
  if (found.size === 0 && !inTests) {
    // `const mm = require('..'); mm(...)`: the local variable's value is the repository's function.
    const typeSymbol = checker.getTypeAtLocation(nameNode).getSymbol();
    if (typeSymbol) take(typeSymbol.declarations || [], 'checker');
  }
  // A helper of the tests (`expectParsed()` from test/helpers.js) is not the code under test.
  if (found.size === 0 && inTests && !inSources) return { name: nameNode.text, found: [], unnamed: false, helper: true };
  const root = rootIdentifier(callee);
  const ownCallee = Boolean(root && bindings.has(root));
  if (found.size === 0 && !inSources && ownCallee) {
    // The compiler could not follow the import (a package self-reference, an untyped
    // CommonJS export): fall back to the name, only for callees bound to the repository's code.
    for (const hit of repo.named(nameNode.text)) {
      found.set(`${hit.rel}\u0000${hit.symbol.qualified_name}`, { ...hit, how: 'name' });
    }
  }
  // A call into the repository's code that lands on no named symbol (`ky.get()`, a method of
  // an interface; a value made by a factory) may be what the test is about.
  const unnamed = found.size === 0 && (inSources || ownCallee);
  return { name: nameNode.text, found: [...found.values()], unnamed };
}

function testCases(repo, program, checker, rel) {
  const sf = program.getSourceFile(path.join(repo.root, rel));
  if (!sf) return [];
  const bindings = ownBindings(repo, sf);
  const out = [];
  const walk = (node, suites) => {
    if (ts.isCallExpression(node)) {
      const title = titleOf(node);
      if (title && calleeKind(node.expression, SUITE_CALLEES)) {
        for (const arg of node.arguments.slice(1)) walk(arg, [...suites, title.text]);
        return;
      }
      const body = bodyOf(node);
      if (title && body && calleeKind(node.expression, TEST_CALLEES)) {
        out.push(testCase(repo, checker, sf, rel, bindings, node, title, body, suites));
        return;
      }
    }
    ts.forEachChild(node, (child) => walk(child, suites));
  };
  walk(sf, []);
  return out;
}

function testCase(repo, checker, sf, rel, bindings, call, title, body, suites) {
  const calls = new Map();
  const ambiguous = new Set();
  const unnamed = new Set();
  const helpers = new Set();
  const largeClasses = new Set();
  const visit = (node) => {
    if ((ts.isCallExpression(node) || ts.isNewExpression(node)) && !ts.isCallExpression(node.expression)) {
      const { name, found, unnamed: lost, helper } = resolveCall(repo, checker, node.expression, bindings);
      if (lost) unnamed.add(name);
      if (helper) helpers.add(name);
      if (found.length > 1) ambiguous.add(name);
      else if (found.length === 1) {
        const { rel: target, how } = found[0];
        let { symbol } = found[0];
        if (ts.isNewExpression(node) && symbol.kind === 'class') {
          const ctor = repo.symbols(target).find((s) => s.qualified_name === `${symbol.qualified_name}.constructor`);
          if (ctor) symbol = { ...ctor, name: symbol.name };
          else if (symbol.end_line - symbol.start_line + 1 > SMALL_CLASS_LINES) {
            largeClasses.add(symbol.name);
            symbol = undefined;
          }
        }
        const key = symbol && `${target}\u0000${symbol.qualified_name}`;
        if (symbol && !calls.has(key)) {
          // `name` is what the test wrote (a class's name for its constructor): the leak check's word.
          calls.set(key, { path: target, qualified_name: symbol.qualified_name, name: symbol.name,
            start_line: symbol.start_line, end_line: symbol.end_line, how });
        }
      }
    }
    ts.forEachChild(node, visit);
  };
  ts.forEachChild(body, visit);
  const text = sf.text;
  return {
    type: 'test',
    path: rel,
    title: title.text,
    describe: suites,
    title_span: toCodePointOffsets(text, [[title.getStart(sf), title.getEnd()]])[0],
    line: sf.getLineAndCharacterOfPosition(call.getStart(sf)).line + 1,
    calls: [...calls.values()],
    ambiguous: [...ambiguous].sort(),
    unnamed: [...unnamed].sort(),
    helpers: [...helpers].sort(),
    large_classes: [...largeClasses].sort(),
  };
}

// A source file's first leading comment that is neither a licence banner nor a directive: the
// analysis service's own rule (node_ts_service/src/fileCard.ts), so the pairs the ranker learns
// from name the same header the index's file cards state as their file's purpose.
function header(rel, text, sf) {
  const found = fileHeader(sf);
  if (!found) return undefined;
  return {
    type: 'header',
    path: rel,
    text: text.slice(found.start, found.end),
    span: toCodePointOffsets(text, [[found.start, found.end]])[0],
    attached: found.attached,
  };
}

function hasExportModifier(node) {
  return ts.canHaveModifiers(node) && (ts.getModifiers(node) || []).some((m) => m.kind === ts.SyntaxKind.ExportKeyword);
}

function declarations(rel, text, sf) {
  const exported = new Set();
  const variables = [];
  const lineOf = (pos) => sf.getLineAndCharacterOfPosition(pos).line + 1;
  const exportValue = (expr) => {
    if (ts.isIdentifier(expr)) exported.add(expr.text);
    else if (ts.isObjectLiteralExpression(expr)) {
      for (const p of expr.properties) {
        if (ts.isShorthandPropertyAssignment(p)) exported.add(p.name.text);
        else if (ts.isPropertyAssignment(p) && ts.isIdentifier(p.initializer)) exported.add(p.initializer.text);
      }
    }
  };
  const isExportsTarget = (left) => (ts.isIdentifier(left) && left.text === 'exports')
    || (ts.isPropertyAccessExpression(left) && ts.isIdentifier(left.expression) && left.expression.text === 'module'
      && left.name.text === 'exports');
  for (const stmt of sf.statements) {
    if (ts.isVariableStatement(stmt)) {
      const decls = stmt.declarationList.declarations;
      if (hasExportModifier(stmt)) for (const d of decls) if (ts.isIdentifier(d.name)) exported.add(d.name.text);
      const d = decls[0];
      if (decls.length === 1 && ts.isIdentifier(d.name) && !(d.initializer && isRequireCall(d.initializer))
        && stmt.jsDoc && stmt.jsDoc.length) {
        variables.push({
          name: d.name.text,
          start_line: lineOf(stmt.getStart(sf, false)),
          end_line: lineOf(stmt.getEnd()),
          jsdoc: jsdocDescription(stmt).description,
          jsdoc_spans: toCodePointOffsets(text, ownJsdocSpans(stmt)),
        });
      }
    } else if ((ts.isFunctionDeclaration(stmt) || ts.isClassDeclaration(stmt) || ts.isInterfaceDeclaration(stmt)
      || ts.isTypeAliasDeclaration(stmt) || ts.isEnumDeclaration(stmt)) && stmt.name && hasExportModifier(stmt)) {
      exported.add(stmt.name.text);
    } else if (ts.isExportDeclaration(stmt) && !stmt.moduleSpecifier && stmt.exportClause
      && ts.isNamedExports(stmt.exportClause)) {
      for (const el of stmt.exportClause.elements) exported.add((el.propertyName || el.name).text);
    } else if (ts.isExportAssignment(stmt)) {
      exportValue(stmt.expression);
    } else if (ts.isExpressionStatement(stmt) && ts.isBinaryExpression(stmt.expression)
      && stmt.expression.operatorToken.kind === ts.SyntaxKind.EqualsToken) {
      const { left, right } = stmt.expression;
      if (isExportsTarget(left)) exportValue(right);
      else if (ts.isPropertyAccessExpression(left) && isExportsTarget(left.expression) && ts.isIdentifier(right)) {
        exported.add(right.text);
      }
    }
  }
  return { type: 'declarations', path: rel, exported: [...exported].sort(), variables };
}

function isRequireCall(expr) {
  return ts.isCallExpression(expr) && ts.isIdentifier(expr.expression) && expr.expression.text === 'require';
}

function main() {
  const input = JSON.parse(fs.readFileSync(0, 'utf8'));
  const root = path.resolve(input.root);
  const repo = new Repository(root, input.sources, input.tests, input.packages || []);
  for (const rel of input.sources) {
    const text = fs.readFileSync(path.join(root, rel), 'utf8').replace(/^\uFEFF/, '');
    const sf = ts.createSourceFile(rel, text, ts.ScriptTarget.Latest, true, scriptKind(rel));
    const found = header(rel, text, sf);
    if (found) process.stdout.write(JSON.stringify(found) + '\n');
    process.stdout.write(JSON.stringify(declarations(rel, text, sf)) + '\n');
  }
  if (input.tests.length === 0) return;
  const program = ts.createProgram({
    rootNames: [...input.tests, ...input.sources].map((rel) => path.join(root, rel)),
    options: {
      allowJs: true,
      checkJs: false,
      noEmit: true,
      skipLibCheck: true,
      types: [],
      target: ts.ScriptTarget.ESNext,
      module: ts.ModuleKind.ESNext,
      moduleResolution: ts.ModuleResolutionKind.Bundler,
      jsx: ts.JsxEmit.Preserve,
    },
  });
  const checker = program.getTypeChecker();
  for (const rel of input.tests) {
    for (const found of testCases(repo, program, checker, rel)) process.stdout.write(JSON.stringify(found) + '\n');
  }
}

main();
