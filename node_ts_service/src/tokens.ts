// Exact cl100k_base token counting, fast enough to count every chunk of a
// 200k-line file inside the chunking budget.
//
// js-tiktoken's `encode` rebuilds its split regex and special-token regex on
// every call and keys its rank map by comma-joined byte lists, which makes it
// ~16 s for typescript.js. The counts here are the same BPE over the same
// ranks (the rank table shipped in js-tiktoken), restructured for speed:
//  1. The text is cut into segments at the start of every non-blank line.
//     No cl100k pre-tokenizer piece can cross such a point: the only pattern
//     alternatives that consume '\n' end at the last newline of a
//     whitespace run (`\s*[\r\n]+`) or right after trailing newlines
//     (` ?[^\s\p{L}\p{N}]+[\r\n]*`), and a non-blank line stops both. So the
//     count of the text is the sum of the counts of its segments, and
//     segments (code lines) repeat a lot, so they are memoised.
//  2. Inside a segment the pre-tokenizer regex yields pieces; each distinct
//     piece is byte-pair-merged once and memoised.
// test/chunker.test.ts compares it with js-tiktoken's own encode on real code and odd inputs.
import { Tiktoken, type TiktokenBPE } from 'js-tiktoken/lite';

interface Encoding {
  ranks: TiktokenBPE;
  splitter: RegExp;
  /** The same pattern anchored at lastIndex: `test` finds the next piece without a match array. */
  stickySplitter: RegExp;
  /** Token bytes (as a latin1 string) to rank. */
  rankOf: Map<string, number>;
  /** Rank to token bytes (as a latin1 string). */
  tokenBytes: string[];
  /** Rank of each single byte. */
  byteRank: number[];
  pairCache: PairRankCache;
}

const NOT_A_TOKEN = -1;

/**
 * Rank of the token two tokens make side by side, by the pair of ranks: an
 * open-addressing table in typed arrays. A Map keyed by a * 2^17 + b boxed
 * every key (it is above the small-integer range) and was a third of the cold
 * token-counting time; cold counting asks ~2M pairs for a 260k-line corpus.
 */
class PairRankCache {
  private bits = 16;
  private left = new Int32Array(1 << this.bits).fill(-1);
  private right = new Int32Array(1 << this.bits);
  private rank = new Int32Array(1 << this.bits);
  private size = 0;

  private slot(a: number, b: number): number {
    const mask = this.left.length - 1;
    // Multiplicative hashing: the top bits of the product mix every bit of the pair.
    let i = Math.imul(Math.imul(a, 0x9e3779b1) ^ b, 0x85ebca6b) >>> (32 - this.bits);
    while (this.left[i] !== -1 && (this.left[i] !== a || this.right[i] !== b)) i = (i + 1) & mask;
    return i;
  }

  /** The cached rank, NOT_A_TOKEN, or undefined when the pair was never asked. */
  get(a: number, b: number): number | undefined {
    const i = this.slot(a, b);
    return this.left[i] === -1 ? undefined : this.rank[i];
  }

  set(a: number, b: number, rank: number): void {
    if (2 * (this.size + 1) > this.left.length) this.grow();
    const i = this.slot(a, b);
    if (this.left[i] === -1) this.size++;
    this.left[i] = a;
    this.right[i] = b;
    this.rank[i] = rank;
  }

  private grow(): void {
    const { left, right, rank } = this;
    this.bits++;
    this.left = new Int32Array(left.length * 2).fill(-1);
    this.right = new Int32Array(left.length * 2);
    this.rank = new Int32Array(left.length * 2);
    this.size = 0;
    for (let i = 0; i < left.length; i++) if (left[i] !== -1) this.set(left[i], right[i], rank[i]);
  }
}

let encoding: Encoding | undefined;

function loadEncoding(): Encoding {
  if (encoding) return encoding;
  // The ranks live behind the package's `exports` map ("js-tiktoken/ranks/cl100k_base"),
  // which the service's node10 module resolution cannot type; Node resolves it at runtime.
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- node10 resolution cannot see the exports-map subpath, and the large ranks table loads lazily on first use
  const ranks = require('js-tiktoken/ranks/cl100k_base') as TiktokenBPE;
  const rankOf = new Map<string, number>();
  const tokenBytes: string[] = [];
  for (const line of ranks.bpe_ranks.split('\n')) {
    if (!line) continue;
    const parts = line.split(' ');
    const offset = Number.parseInt(parts[1], 10);
    for (let i = 2; i < parts.length; i++) {
      const bytes = Buffer.from(parts[i], 'base64').toString('latin1');
      rankOf.set(bytes, offset + i - 2);
      tokenBytes[offset + i - 2] = bytes;
    }
  }
  const byteRank: number[] = [];
  for (let b = 0; b < 256; b++) {
    const r = rankOf.get(String.fromCharCode(b));
    if (r === undefined) throw new Error(`cl100k_base ranks lack byte ${b}`);
    byteRank.push(r);
  }
  encoding = {
    ranks,
    splitter: new RegExp(ranks.pat_str, 'ug'),
    stickySplitter: new RegExp(ranks.pat_str, 'uy'),
    rankOf,
    tokenBytes,
    byteRank,
    pairCache: new PairRankCache(),
  };
  return encoding;
}

/** The reference encoder, for tests that check countTokens against js-tiktoken itself. */
export function referenceEncoder(): Tiktoken {
  return new Tiktoken(loadEncoding().ranks);
}

const pieceMemo = new Map<string, number>();
const segmentMemo = new Map<string, number>();
// Bounded memos: a long-running service sees many files; clearing wholesale is
// cheaper than LRU bookkeeping and the hit rate recovers within a file.
const MEMO_LIMIT = 500_000;
const MEMO_SEGMENT_MAX = 2_000;

function bytesKey(piece: string): string {
  for (let i = 0; i < piece.length; i++) {
    if (piece.charCodeAt(i) > 127) return Buffer.from(piece, 'utf8').toString('latin1');
  }
  return piece;
}

/**
 * Rank of the token made of tokens `a` and `b` side by side (Infinity when that
 * is not a token), cached by the pair: BPE asks the same pairs again and again,
 * and a numeric key avoids building a byte string for every question.
 */
function pairRank(a: number, b: number, enc: Encoding): number {
  let rank = enc.pairCache.get(a, b);
  if (rank === undefined) {
    rank = enc.rankOf.get(enc.tokenBytes[a] + enc.tokenBytes[b]) ?? NOT_A_TOKEN;
    enc.pairCache.set(a, b, rank);
  }
  return rank === NOT_A_TOKEN ? Infinity : rank;
}

/** Number of BPE tokens of one pre-tokenizer piece: tiktoken's byte_pair_merge, lowest rank first, leftmost on ties. */
function mergeCount(key: string, enc: Encoding): number {
  if (key.length <= 1 || enc.rankOf.has(key)) return 1;
  const parts: number[] = [];
  for (let i = 0; i < key.length; i++) parts.push(enc.byteRank[key.charCodeAt(i)]);
  const pairs: number[] = [];
  for (let i = 0; i + 1 < parts.length; i++) pairs.push(pairRank(parts[i], parts[i + 1], enc));
  while (parts.length > 1) {
    let best = Infinity;
    let at = -1;
    for (let i = 0; i < pairs.length; i++) {
      if (pairs[i] < best) {
        best = pairs[i];
        at = i;
      }
    }
    if (at < 0) break;
    // The merged part is the token whose rank the pair had.
    parts[at] = best;
    parts.splice(at + 1, 1);
    pairs.splice(at, 1);
    if (at < pairs.length) pairs[at] = pairRank(parts[at], parts[at + 1], enc);
    if (at > 0) pairs[at - 1] = pairRank(parts[at - 1], parts[at], enc);
  }
  return parts.length;
}

function countSegment(segment: string, enc: Encoding): number {
  let total = 0;
  const { splitter, stickySplitter } = enc;
  const length = segment.length;
  let at = 0;
  while (at < length) {
    // Pieces are contiguous (every character belongs to one alternative), so
    // the next piece starts where the last ended; the unanchored search stays
    // as the fallback should a character ever start no piece.
    let piece: string;
    stickySplitter.lastIndex = at;
    if (stickySplitter.test(segment)) {
      piece = segment.slice(at, stickySplitter.lastIndex);
      at = stickySplitter.lastIndex;
    } else {
      splitter.lastIndex = at;
      const match = splitter.exec(segment);
      if (match === null) break;
      piece = match[0];
      at = splitter.lastIndex;
    }
    // A one-byte piece is one token: no memo lookup for brackets and operators.
    let n = piece.length === 1 && piece.charCodeAt(0) < 128 ? 1 : pieceMemo.get(piece);
    if (n === undefined) {
      n = mergeCount(bytesKey(piece), enc);
      if (pieceMemo.size >= MEMO_LIMIT) pieceMemo.clear();
      pieceMemo.set(piece, n);
    }
    total += n;
  }
  return total;
}

// Every character of the regex class \s except '\n': a line made only of these is blank,
// and a blank line does not stop a `\s*[\r\n]+` piece.
const NON_NEWLINE_SPACE = /[^\S\n]/;

function isHorizontalSpace(code: number): boolean {
  if (code === 32 || code === 9) return true;
  if (code < 9 || (code > 13 && code < 128)) return false;
  return code !== 10 && NON_NEWLINE_SPACE.test(String.fromCharCode(code));
}

/** Exact cl100k_base token count of `text` (special tokens count as ordinary text). */
export function countTokens(text: string): number {
  return countTokensUpTo(text, Infinity);
}

/**
 * The exact count of `text` when it is at most `limit`; otherwise some number
 * above `limit`, found without counting the rest. Segments add up, so the
 * running total only grows: a caller that only needs to know whether a text
 * fits a budget (a 200k-line bundle's collapsed IIFE does not) stops early.
 */
export function countTokensUpTo(text: string, limit: number): number {
  const enc = loadEncoding();
  const length = text.length;
  let total = 0;
  let start = 0;
  while (start < length) {
    let end = length;
    let from = start;
    for (;;) {
      const newline = text.indexOf('\n', from);
      if (newline < 0) break;
      let k = newline + 1;
      while (k < length && isHorizontalSpace(text.charCodeAt(k))) k++;
      if (k >= length) break;
      if (text.charCodeAt(k) !== 10) {
        end = newline + 1;
        break;
      }
      from = newline + 1;
    }
    const segment = text.slice(start, end);
    let n = segmentMemo.get(segment);
    if (n === undefined) {
      n = countSegment(segment, enc);
      // Long segments (generated code, data) rarely repeat and would pin memory.
      if (segment.length <= MEMO_SEGMENT_MAX) {
        if (segmentMemo.size >= MEMO_LIMIT) segmentMemo.clear();
        segmentMemo.set(segment, n);
      }
    }
    total += n;
    if (total > limit) return total;
    start = end;
  }
  return total;
}
