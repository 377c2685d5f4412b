// Walks of a syntax tree on an explicit stack instead of by recursion.
// Generated or pathological code nests far deeper than a thread's stack: a
// 100,000-term string concatenation is a tree 100,000 levels deep, and the
// parser builds it without recursing. A walk that recursed per level would
// fail on a file the parser read fine.
import ts from 'typescript';

/**
 * Visits `root` and every node below it, depth first in source order (the
 * order recursion with ts.forEachChild gives). `visit` returning false skips
 * that node's children.
 */
export function walkTree(root: ts.Node, visit: (node: ts.Node) => boolean | void): void {
  const stack: ts.Node[] = [root];
  const push = (child: ts.Node): void => {
    stack.push(child);
  };
  while (stack.length > 0) {
    const node = stack.pop()!;
    if (visit(node) === false) continue;
    const from = stack.length;
    ts.forEachChild(node, push);
    // Pushed in source order, popped last first: reverse the run.
    for (let lo = from, hi = stack.length - 1; lo < hi; lo++, hi--) {
      const first = stack[lo];
      stack[lo] = stack[hi];
      stack[hi] = first;
    }
  }
}

/** Whether `root` or a node below it satisfies `predicate`; stops at the first that does. */
export function someNode(root: ts.Node, predicate: (node: ts.Node) => boolean): boolean {
  const stack: ts.Node[] = [root];
  const push = (child: ts.Node): void => {
    stack.push(child);
  };
  while (stack.length > 0) {
    const node = stack.pop()!;
    if (predicate(node)) return true;
    ts.forEachChild(node, push);
  }
  return false;
}
