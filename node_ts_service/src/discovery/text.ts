// Text helpers of symbol discovery: ids, digests, one-line text and line
// numbers. A leaf module: symbols.ts re-exports what its importers use.
import { createHash, hash } from 'node:crypto';
import type ts from 'typescript';

// One-shot hashing (Node >= 20.12) skips the Hash object a digest of a short
// id otherwise costs; a chunk id and a snippet hash are taken per symbol.
const oneShotHash = typeof hash === 'function' ? hash : undefined;

/** Hex digest of the UTF-8 bytes of `text`. */
export function hexDigest(algorithm: 'sha1' | 'sha256', text: string): string {
  return oneShotHash ? oneShotHash(algorithm, text, 'hex') : createHash(algorithm).update(text).digest('hex');
}

export function stableId(parts: string[]): string {
  return hexDigest('sha1', parts.join('\0')).slice(0, 20);
}

export function compact(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}

export function truncate(text: string, limit: number): string {
  return text.length <= limit ? text : `${text.slice(0, limit - 1)}…`;
}

/** 1-based line of a character offset (CRLF-aware: TypeScript's line map splits on \r\n, \n and \r). */
export function lineOf(sf: ts.SourceFile, pos: number): number {
  return sf.getLineAndCharacterOfPosition(pos).line + 1;
}
