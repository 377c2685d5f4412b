// Which discoverer a node goes to: declarations (declarations.ts), values
// bound to names (bindings.ts) or code passed to calls (calls.ts).
import ts from 'typescript';
import { assignmentSpec, boundSpec, boundValue, isBoundObject, isNestedChunkObject, variableSpecs } from './bindings';
import { anonymousFunctionSpec, callObjectSpec, callOfArgument, callStatementSpec, isCallArgumentObject, isIifeCallee } from './calls';
import { braceBody, classSpec, declarationSpec, functionLikeSpec, namedFunctionSpec, namespaceSpec } from './declarations';
import { NO_SPECS, objectSpec, type Site, type Spec } from './spec';
import { compact, truncate } from './text';

/** Kinds of node that can be a symbol: classify looks at no other. */
export const CANDIDATE_KINDS = new Uint8Array(ts.SyntaxKind.Count);
for (const kind of [
  ts.SyntaxKind.FunctionDeclaration,
  ts.SyntaxKind.FunctionExpression,
  ts.SyntaxKind.ClassDeclaration,
  ts.SyntaxKind.InterfaceDeclaration,
  ts.SyntaxKind.EnumDeclaration,
  ts.SyntaxKind.TypeAliasDeclaration,
  ts.SyntaxKind.ModuleDeclaration,
  ts.SyntaxKind.MethodDeclaration,
  ts.SyntaxKind.Constructor,
  ts.SyntaxKind.GetAccessor,
  ts.SyntaxKind.SetAccessor,
  ts.SyntaxKind.PropertyDeclaration,
  ts.SyntaxKind.PropertyAssignment,
  ts.SyntaxKind.VariableStatement,
  ts.SyntaxKind.ExpressionStatement,
  ts.SyntaxKind.ExportAssignment,
  ts.SyntaxKind.ArrowFunction,
  ts.SyntaxKind.ObjectLiteralExpression,
]) {
  CANDIDATE_KINDS[kind] = 1;
}

/** Property names as written: computed names keep their brackets, private names their '#'. */
function propertyNameText(name: ts.PropertyName | undefined, sf: ts.SourceFile): string {
  if (!name) return '';
  if (ts.isIdentifier(name) || ts.isPrivateIdentifier(name)) return name.text;
  if (ts.isStringLiteral(name) || ts.isNumericLiteral(name) || ts.isNoSubstitutionTemplateLiteral(name)) return name.text;
  return compact(sf.text.slice(name.getStart(sf), name.end));
}

function orNone(spec: Spec | undefined): readonly Spec[] {
  return spec ? [spec] : NO_SPECS;
}

/** The symbols `node`, at `site`, stands for, in order; most candidates stand for none. */
export function classify(site: Site, node: ts.Node): readonly Spec[] {
  const sf = site.sf;
  switch (node.kind) {
    case ts.SyntaxKind.FunctionDeclaration: {
      const fn = node as ts.FunctionDeclaration;
      return [namedFunctionSpec(sf, fn, fn.name ? fn.name.text : 'default', true)];
    }
    case ts.SyntaxKind.ClassDeclaration: {
      const cls = node as ts.ClassDeclaration;
      return [classSpec(sf, cls, cls, cls.name ? cls.name.text : 'default', [cls])];
    }
    case ts.SyntaxKind.InterfaceDeclaration: {
      const d = node as ts.InterfaceDeclaration;
      return [declarationSpec(d, 'interface', d.name.text, braceBody(sf, d.members.pos - 1, d.end))];
    }
    case ts.SyntaxKind.EnumDeclaration: {
      const d = node as ts.EnumDeclaration;
      return [declarationSpec(d, 'enum', d.name.text, braceBody(sf, d.members.pos - 1, d.end))];
    }
    case ts.SyntaxKind.TypeAliasDeclaration: {
      const d = node as ts.TypeAliasDeclaration;
      const body: Spec['body'] = ts.isTypeLiteralNode(d.type) ? { start: d.type.getStart(sf), end: d.type.end, style: 'brace' } : undefined;
      const spec = declarationSpec(d, 'type', d.name.text, body);
      spec.signature = truncate(compact(sf.text.slice(d.getStart(sf), Math.min(d.end, d.getStart(sf) + 1000))), 200);
      return [spec];
    }
    case ts.SyntaxKind.ModuleDeclaration:
      return [namespaceSpec(sf, node as ts.ModuleDeclaration)];
    case ts.SyntaxKind.MethodDeclaration: {
      const m = node as ts.MethodDeclaration;
      if (ts.isObjectLiteralExpression(m.parent) && !isBoundObject(site, m.parent)) return NO_SPECS;
      return [functionLikeSpec(sf, m, 'method', 'method', propertyNameText(m.name, sf), true)];
    }
    case ts.SyntaxKind.Constructor:
      return [functionLikeSpec(sf, node as ts.ConstructorDeclaration, 'constructor', 'constructor', 'constructor', true)];
    case ts.SyntaxKind.GetAccessor:
    case ts.SyntaxKind.SetAccessor: {
      const a = node as ts.AccessorDeclaration;
      if (ts.isObjectLiteralExpression(a.parent) && !isBoundObject(site, a.parent)) return NO_SPECS;
      const idKind = ts.isGetAccessor(a) ? 'accessor:get' : 'accessor:set';
      return [functionLikeSpec(sf, a, 'accessor', idKind, propertyNameText(a.name, sf), false)];
    }
    case ts.SyntaxKind.PropertyDeclaration: {
      const p = node as ts.PropertyDeclaration;
      const name = propertyNameText(p.name, sf);
      return orNone(boundSpec(sf, p, p.name, name, name, boundValue(p.initializer), 'method', p));
    }
    case ts.SyntaxKind.PropertyAssignment: {
      const p = node as ts.PropertyAssignment;
      if (!isBoundObject(site, p.parent)) return NO_SPECS;
      const value = boundValue(p.initializer);
      const name = propertyNameText(p.name, sf);
      if (value.object && p.initializer === value.object && isNestedChunkObject(site, value.object)) {
        return [objectSpec(sf, p, p.name, name, value.object, `${name}: { … }`, false)];
      }
      if (!value.fn && !value.cls) return NO_SPECS;
      return orNone(boundSpec(sf, p, p.name, name, name, value, 'method', undefined));
    }
    case ts.SyntaxKind.VariableStatement:
      return variableSpecs(site, node as ts.VariableStatement);
    case ts.SyntaxKind.ExpressionStatement:
      return orNone(assignmentSpec(sf, node as ts.ExpressionStatement) ?? callStatementSpec(site, node as ts.ExpressionStatement));
    case ts.SyntaxKind.ArrowFunction:
      return orNone(anonymousFunctionSpec(site, node as ts.ArrowFunction));
    case ts.SyntaxKind.ObjectLiteralExpression: {
      const obj = node as ts.ObjectLiteralExpression;
      const call = callOfArgument(obj);
      if (!call || !isCallArgumentObject(site, obj)) return NO_SPECS;
      return [callObjectSpec(sf, call, obj, obj)];
    }
    case ts.SyntaxKind.FunctionExpression: {
      // Reached only when not bound to a name (bound ones are claimed by their binding):
      // a named function expression still names a function, e.g. `return function retry() {…}`.
      const fn = node as ts.FunctionExpression;
      if (!fn.name) return orNone(anonymousFunctionSpec(site, fn));
      if (isIifeCallee(fn)) return orNone(anonymousFunctionSpec(site, fn, fn.name.text));
      return [namedFunctionSpec(sf, fn, fn.name.text, false)];
    }
    case ts.SyntaxKind.ExportAssignment: {
      const ea = node as ts.ExportAssignment;
      const value = boundValue(ea.expression);
      const fnName = value.fn && ts.isFunctionExpression(value.fn) && value.fn.name ? value.fn.name.text : 'default';
      return orNone(boundSpec(sf, ea, ea, fnName, fnName, value, 'function', undefined));
    }
    default:
      return NO_SPECS;
  }
}
