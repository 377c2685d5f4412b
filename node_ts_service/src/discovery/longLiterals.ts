// Long literals of data: found with a file's symbols so that every chunk
// and rendering of the file can show them shortened.
import ts from 'typescript';
import { LONG_LINE } from '../fileio';
import type { Span } from '../symbols';
import { someNode, walkTree } from '../walk';
import { lineOf } from './text';

const LITERAL_KINDS = new Set<ts.SyntaxKind>([
  ts.SyntaxKind.StringLiteral,
  ts.SyntaxKind.NoSubstitutionTemplateLiteral,
  ts.SyntaxKind.TemplateExpression,
  ts.SyntaxKind.RegularExpressionLiteral,
  ts.SyntaxKind.ArrayLiteralExpression,
  ts.SyntaxKind.ObjectLiteralExpression,
]);

const isCode = (n: ts.Node): boolean => ts.isFunctionLike(n) || ts.isClassLike(n);

/**
 * Literals longer than LONG_LINE characters on a single line that hold no
 * code (no function or class inside): a base64 image, a JSON blob, a number
 * table. A file with such a line is indexed (fileio's detectMinified tells it
 * from minified code), but a chunk shows each as a short marker
 * (elidedLiteral): tens of thousands of characters of data would drown the
 * words that describe the code in search, and an agent reading the chunk
 * learns nothing from them. Rendered symbols show the marker too.
 */
export function longLiterals(sf: ts.SourceFile): Span[] {
  const text = sf.text;
  let longLine = false;
  for (let start = 0; start < text.length && !longLine; ) {
    const end = text.indexOf('\n', start);
    const stop = end < 0 ? text.length : end;
    longLine = stop - start > LONG_LINE;
    start = stop + 1;
  }
  if (!longLine) return [];
  const spans: Span[] = [];
  walkTree(sf, (node) => {
    if (node.end - node.pos <= LONG_LINE) return false;
    if (!LITERAL_KINDS.has(node.kind)) return true;
    const start = node.getStart(sf);
    if (node.end - start <= LONG_LINE || lineOf(sf, start) !== lineOf(sf, node.end - 1) || someNode(node, isCode)) return true;
    spans.push({ start, end: node.end });
    return false;
  });
  return spans;
}
