// Reading one source file and deciding whether it is worth parsing. Scan and
// ChunkFiles share these rules so a file is never cataloged by one and
// refused by the other.
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { Language, SkipReason } from './types';

/**
 * The filesystem calls the scanner and reader make. Tests swap single calls
 * to reproduce races (a file deleted between listing and reading) and errors
 * that root cannot provoke with chmod (EACCES).
 */
export interface FsOps {
  readdir(dir: string): fs.Dirent[];
  stat(p: string): fs.BigIntStats;
  lstat(p: string): fs.BigIntStats;
  realpath(p: string): string;
  readFile(p: string): Buffer;
}

export const realFs: FsOps = {
  readdir: (dir) => fs.readdirSync(dir, { withFileTypes: true }),
  stat: (p) => fs.statSync(p, { bigint: true }),
  lstat: (p) => fs.lstatSync(p, { bigint: true }),
  realpath: (p) => fs.realpathSync.native(p),
  readFile: (p) => fs.readFileSync(p),
};

const LANGUAGE_BY_EXTENSION: Record<string, Language> = {
  '.ts': 'typescript',
  '.mts': 'typescript',
  '.cts': 'typescript',
  '.tsx': 'tsx',
  '.js': 'javascript',
  '.mjs': 'javascript',
  '.cjs': 'javascript',
  '.jsx': 'jsx',
};

/**
 * Declaration files (.d.ts, .d.mts, .d.cts) are left out of the catalog (the
 * scan lists them as skipped, reason declaration_file): they hold signatures
 * only, duplicate the symbols of the sources they describe (or of
 * dependencies), and the type checker still reads them when resolving
 * references.
 */
export function isDeclarationFile(fileName: string): boolean {
  return /\.d\.[cm]?ts$/i.test(fileName) || /\.d\.[^.]+\.ts$/i.test(fileName);
}

export function languageOf(fileName: string): Language | undefined {
  return LANGUAGE_BY_EXTENSION[path.extname(fileName).toLowerCase()];
}

export function isSourceFileName(fileName: string): boolean {
  return languageOf(fileName) !== undefined && !isDeclarationFile(fileName);
}

export function sha256Hex(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex');
}

export interface Skip {
  reason: SkipReason;
  detail: string;
}

export type Decoded = { ok: true; text: string } | ({ ok: false } & Skip);

const UTF8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false });
const UTF16LE = new TextDecoder('utf-16le', { fatal: true, ignoreBOM: false });
const UTF16BE = new TextDecoder('utf-16be', { fatal: true, ignoreBOM: false });

/** Bytes → text; a BOM is honoured and dropped (TextDecoder strips it). */
export function decodeSource(bytes: Uint8Array): Decoded {
  try {
    if (bytes.length >= 2 && bytes[0] === 0xff && bytes[1] === 0xfe) return { ok: true, text: UTF16LE.decode(bytes) };
    if (bytes.length >= 2 && bytes[0] === 0xfe && bytes[1] === 0xff) return { ok: true, text: UTF16BE.decode(bytes) };
  } catch {
    return { ok: false, reason: 'not_utf8', detail: 'UTF-16 byte order mark but invalid UTF-16 content' };
  }
  const nul = bytes.indexOf(0);
  if (nul !== -1) return { ok: false, reason: 'binary', detail: `NUL byte at offset ${nul}` };
  try {
    return { ok: true, text: UTF8.decode(bytes) };
  } catch {
    return { ok: false, reason: 'not_utf8', detail: `invalid UTF-8 near byte ${firstInvalidUtf8(bytes)}` };
  }
}

function firstInvalidUtf8(bytes: Uint8Array): number {
  let lo = 0;
  let hi = bytes.length;
  // Binary search for the shortest failing prefix; a prefix that ends inside
  // a multi-byte sequence fails too, which only moves the answer by ≤ 3 bytes.
  const fails = (n: number) => {
    try {
      new TextDecoder('utf-8', { fatal: true }).decode(bytes.subarray(0, n));
      return false;
    } catch {
      return true;
    }
  };
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (fails(mid + 1)) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

/** Minified code: no useful symbols, and it swamps parse time. */
const MINIFIED_NAME = /\.min\.[cm]?[jt]sx?$|[.-]bundle\.min\./i;
const AVERAGE_LINE_LIMIT = 1000;
/** A line longer than this is a long line: minified code, or data on one line. */
export const LONG_LINE = 1000;
/**
 * Share of a long line that may be something other than literal data (a
 * declaration around it, `as const`, a call wrapping it) for the line to be
 * data rather than code.
 */
const DATA_LINE_CODE_SHARE = 0.05;

/**
 * Whether a long line is data: one or more literals (strings, templates,
 * numbers, arrays and objects of them, `true`, `false`, `null`) with almost
 * nothing else. Minified code is the opposite: identifiers, calls,
 * operators and keywords throughout. Measured outside string literals, after
 * removing numbers, literal keywords, object keys and the punctuation of
 * arrays and objects: what is left must be under DATA_LINE_CODE_SHARE of the
 * line (`export const ICON = "data:…";` leaves `export const ICON = ;`).
 */
export function isDataLine(line: string): boolean {
  let outside = '';
  for (let i = 0; i < line.length; i++) {
    const c = line.charCodeAt(i);
    if (c === 34 || c === 39 || c === 96) {
      for (i++; i < line.length && line.charCodeAt(i) !== c; i++) if (line.charCodeAt(i) === 92) i++;
      outside += ' ';
    } else {
      outside += line[i];
    }
  }
  const code = outside
    .replace(/\b(?:true|false|null|undefined|NaN|Infinity)\b/g, '')
    .replace(/[A-Za-z_$][\w$]*\s*:/g, '')
    // A sign belongs to a number only where a value starts (`[-1, +2]`, `x: -3`): after an
    // operand it is an operator, and `1+1+1…` is code.
    .replace(/(?:(?<=^|[\s[{(,:])[-+])?(?:0[xX][\da-fA-F_]+n?|(?:\d[\d_]*\.?[\d_]*|\.\d[\d_]*)(?:[eE][-+]?\d+)?n?)/g, '')
    .replace(/[\s[\]{},:]/g, '');
  return code.length <= line.length * DATA_LINE_CODE_SHARE;
}

/**
 * Minified code is skipped; data on long lines is not. A file is minified when
 * its name says so, or when its long lines that are code (not data, see
 * isDataLine) hold most of its text, or every line is long on average
 * without the data lines. A file of normal code with one 40,000-character
 * base64 string, JSON literal or number table is indexed, the literal
 * shortened in its chunks (see the chunker's elided literals).
 */
export function detectMinified(fileName: string, text: string): Skip | undefined {
  if (MINIFIED_NAME.test(path.basename(fileName))) {
    return { reason: 'minified', detail: 'file name marks it as minified' };
  }
  if (text.length < 2 * LONG_LINE) return undefined;
  let lines = 0;
  let longest = 0;
  let inLongCodeLines = 0;
  let inDataLines = 0;
  let dataLines = 0;
  let start = 0;
  while (start <= text.length) {
    let end = text.indexOf('\n', start);
    if (end === -1) end = text.length;
    const len = end - start;
    lines++;
    if (len > longest) longest = len;
    if (len > LONG_LINE) {
      if (isDataLine(text.slice(start, end))) {
        inDataLines += len;
        dataLines++;
      } else {
        inLongCodeLines += len;
      }
    }
    start = end + 1;
  }
  const average = Math.round(text.length / lines);
  const codeLines = lines - dataLines;
  const codeAverage = codeLines > 0 ? (text.length - inDataLines) / codeLines : 0;
  // Either every line is long, or most of the text sits on a few huge lines
  // (a bundle with a short license header still qualifies); data lines aside.
  if (codeAverage > AVERAGE_LINE_LIMIT || inLongCodeLines > (text.length - inDataLines) / 2) {
    return {
      reason: 'minified',
      detail: `longest line ${longest} chars, average ${average} chars over ${lines} lines`,
    };
  }
  return undefined;
}

/**
 * Suffixes that only generators write: protoc's JavaScript and gRPC stubs
 * (`_pb`, `_grpc_pb`), protobufjs's and others' `.pb`, and the `.generated`
 * that GraphQL and other codegen tools are set to emit.
 */
const GENERATED_NAME = /(?:\.generated\.[cm]?[jt]sx?|(?:_grpc)?_pb\.[jt]s|\.pb\.[jt]s)$/i;
/**
 * Only the start of a file is read for its header: generators put their
 * marker first, and a license above it fits well within this.
 */
const HEADER_CHARS = 4096;
/** A directive ('use strict', 'use client') may come before the header of compiled or framework code. */
const DIRECTIVE = /(['"])use [\w ]+\1;?/y;
/**
 * Generators' markers, tried in order against the header; the first that
 * matches names itself in the skip's detail. Generic words ("generated" on
 * its own, "Generated by …" before any tool) are not enough: a hand-written
 * file may say that it was generated once and is maintained by hand since.
 */
const GENERATED_MARKERS: readonly { pattern: RegExp; marker: (m: RegExpExecArray) => string }[] = [
  // Meta's convention (Relay, Hermes, protobuf-es and protobuf-ts write it too); also `@generated SignedSource<<…>>`.
  { pattern: /(?<![\w@])@generated\b/, marker: () => '@generated' },
  // https://golang.org/s/generatedcode, which ts-proto, Connect and others follow.
  { pattern: /^\/\/ Code generated .* DO NOT EDIT\.\r?$/m, marker: () => 'Code generated ... DO NOT EDIT.' },
  { pattern: /\bthis (?:file|code) (?:was|is|has been) (?:automatically |auto-?)?generated\b/i, marker: (m) => m[0] },
  // Parser generators and protoc, which name themselves.
  {
    pattern: /\bgenerated (?:automatically )?(?:from \S+ )?by (?:the )?(?:ANTLR|Peggy|PEG\.js|nearley|jison|protocol buffer compiler|protoc-gen-[\w-]+|ts-proto|grpc-tools)\b/i,
    marker: (m) => m[0],
  },
];
/** "Do not edit" beside a mention of generation (grpc-tools' `GENERATED CODE -- DO NOT EDIT!`, OpenAPI Generator's notice). */
const DO_NOT_EDIT = /\bdo not edit\b/i;
const GENERATED_WORD = /\b(?:auto[- ]?)?generated\b/i;

/**
 * The comments a file opens with, before its first statement (a shebang and
 * directives aside), within its first HEADER_CHARS: where generators put
 * their markers. A later comment or a string that mentions generated code
 * is not a header.
 */
export function headerComments(text: string): string {
  const head = text.slice(0, HEADER_CHARS);
  let at = head.startsWith('#!') ? lineEnd(head, 0) : 0;
  let comments = '';
  for (;;) {
    while (at < head.length && /\s/.test(head[at])) at++;
    if (head.startsWith('//', at)) {
      const end = lineEnd(head, at);
      comments += head.slice(at, end) + '\n';
      at = end;
    } else if (head.startsWith('/*', at)) {
      const close = head.indexOf('*/', at + 2);
      const end = close === -1 ? head.length : close + 2;
      comments += head.slice(at, end) + '\n';
      at = end;
    } else {
      DIRECTIVE.lastIndex = at;
      if (!DIRECTIVE.test(head)) return comments;
      at = DIRECTIVE.lastIndex;
    }
  }
}

function lineEnd(text: string, from: number): number {
  const end = text.indexOf('\n', from);
  return end === -1 ? text.length : end;
}

/**
 * Generated source is skipped: stubs and clients run to megabytes of
 * repetitive code that swamps an index and its keyword results, and nobody
 * searches them for code to change. A file is generated when its name has a
 * generated file's suffix or its header (headerComments) carries a
 * generator's marker.
 */
export function detectGenerated(fileName: string, text: string): Skip | undefined {
  const named = GENERATED_NAME.exec(path.basename(fileName));
  if (named) return { reason: 'generated', detail: `file name matches *${named[0]}` };
  const header = headerComments(text);
  for (const { pattern, marker } of GENERATED_MARKERS) {
    const found = pattern.exec(header);
    if (found) return { reason: 'generated', detail: `header says "${marker(found)}"` };
  }
  if (DO_NOT_EDIT.test(header)) {
    const generated = GENERATED_WORD.exec(header);
    if (generated) return { reason: 'generated', detail: `header says "DO NOT EDIT" and "${generated[0]}"` };
  }
  return undefined;
}

export function skipForError(err: unknown): Skip {
  const code = (err as NodeJS.ErrnoException)?.code;
  if (code === 'ENOENT' || code === 'ENOTDIR') return { reason: 'vanished', detail: 'deleted while being read' };
  if (code === 'ELOOP') return { reason: 'symlink_loop', detail: 'too many levels of symbolic links' };
  return { reason: 'unreadable', detail: code ? `${code}: ${errorMessage(err)}` : errorMessage(err) };
}

function errorMessage(err: unknown): string {
  const message = err instanceof Error ? err.message : String(err);
  // Node prefixes errno messages with "CODE: ", which the caller already has.
  return message.replace(/^[A-Z]+: /, '');
}

export interface LoadedSource {
  bytes: Buffer;
  text: string;
  contentHash: string;
  lineCount: number;
}

export type LoadResult = ({ ok: true } & LoadedSource) | ({ ok: false; contentHash: string } & Skip);

/** The settings a file is vetted against (config.ts: ANALYSIS_MAX_FILE_BYTES, ANALYSIS_INDEX_GENERATED). */
export interface LoadRules {
  maxFileBytes: number;
  /** Index generated files as hand-written ones instead of skipping them. */
  indexGenerated?: boolean;
}

/**
 * Reads a file once and applies every content rule. A skipped file still
 * reports its hash when the bytes were read, so callers can tell a changed
 * bundle from an unchanged one.
 */
export function loadSource(absolutePath: string, sizeBytes: number, rules: LoadRules, fsOps: FsOps = realFs): LoadResult {
  const { maxFileBytes } = rules;
  if (sizeBytes > maxFileBytes) {
    return { ok: false, contentHash: '', reason: 'too_large', detail: `${sizeBytes} bytes exceeds limit of ${maxFileBytes}` };
  }
  let bytes: Buffer;
  try {
    bytes = fsOps.readFile(absolutePath);
  } catch (err) {
    return { ok: false, contentHash: '', ...skipForError(err) };
  }
  const contentHash = sha256Hex(bytes);
  if (bytes.length > maxFileBytes) {
    return { ok: false, contentHash, reason: 'too_large', detail: `${bytes.length} bytes exceeds limit of ${maxFileBytes}` };
  }
  const decoded = decodeSource(bytes);
  if (!decoded.ok) return { ok: false, contentHash, reason: decoded.reason, detail: decoded.detail };
  const generated = rules.indexGenerated ? undefined : detectGenerated(absolutePath, decoded.text);
  if (generated) return { ok: false, contentHash, ...generated };
  const minified = detectMinified(absolutePath, decoded.text);
  if (minified) return { ok: false, contentHash, ...minified };
  return { ok: true, bytes, text: decoded.text, contentHash, lineCount: countLines(decoded.text) };
}

export function countLines(text: string): number {
  if (text.length === 0) return 0;
  let lines = 1;
  let at = text.indexOf('\n');
  while (at !== -1) {
    lines++;
    at = text.indexOf('\n', at + 1);
  }
  // A trailing newline ends the last line rather than starting a new one.
  return text.endsWith('\n') ? lines - 1 : lines;
}
