// Watches of the folders a scan walked, so that the next scan of an unchanged
// workspace answers "unchanged" instead of walking it again. The walk reads
// every folder and stats every file (45 ms for the 972 files of ws-300k, and
// the catalog's round trip on top), and a search syncs before it answers: on
// an unchanged workspace that walk was a quarter of an answer's latency.
//
// A folder's watch reports any entry created, removed, renamed or written in
// it, which covers every change a walk could see: files listed or not, ignore
// files, subfolders appearing (a nested repository's .git included). Folders
// the walk did not enter (ignored, excluded, nested repositories) are not
// watched: nothing in them can change a scan.
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';

/**
 * File systems whose changes the kernel reports to a watch whoever makes
 * them (statfs magic numbers): ext2/3/4, XFS, Btrfs, tmpfs, overlayfs (a
 * container's root), ZFS, F2FS. A network or FUSE file system may change
 * under another machine's hands unseen, so it is scanned every time.
 */
const WATCHABLE_FILE_SYSTEMS: ReadonlySet<number> = new Set([
  0xef53, 0x58465342, 0x9123683e, 0x01021994, 0x794c7630, 0x2fc12fc1, 0xf2f52010,
]);

/**
 * A token is honoured for this long at most: a change the kernel did not
 * report (a folder renamed above the root, a repository created above it)
 * is seen by the next full scan, at most this late. Syncs of an agent's
 * questions come seconds apart, so one walk a minute costs nothing.
 */
export const MAX_TOKEN_AGE_MS = 60_000;

/** Why a workspace is scanned every time; undefined when its folders can be watched. */
export function unwatchableReason(root: string, platform: NodeJS.Platform = process.platform): string | undefined {
  // Elsewhere fs.watch of a folder may miss a change to a file in it (a
  // file's own watch is needed), so the walk stays the only answer.
  if (platform !== 'linux') return `watching folders is not used on ${platform}`;
  try {
    const type = Number(fs.statfsSync(root).type);
    return WATCHABLE_FILE_SYSTEMS.has(type) ? undefined : `file system type 0x${type.toString(16)} may change unseen`;
  } catch (err) {
    return `statfs failed: ${(err as Error).message}`;
  }
}

/**
 * Events kept for `writesSince`; past this many since a token, its next scan
 * walks (a checkout or a build wrote far more than an edit does).
 */
export const MAX_LOGGED_EVENTS = 2048;

/** One event of a folder's watch: the entry it names (absolute) and whether it was a write or a rename. */
export interface WatchEvent {
  readonly path: string;
  readonly kind: 'change' | 'rename';
}

/** What one scan noted while it walked: the change count when it began and the folders it read. */
export interface WatchMark {
  readonly changes: number;
  readonly folders: Set<string>;
  readonly startedMs: number;
}

/**
 * The watches of one workspace. A scan calls `begin` before its walk,
 * `folder` before it reads each folder, and `finish` after; the token it
 * returns stands for that scan until any watched folder reports a change.
 * A change counts from the moment its folder's watch exists, and the walk
 * reads a folder only after, so a change during the walk is never missed:
 * either the walk saw it or it moved the count past the token's.
 */
export class FolderWatch {
  private readonly watchers = new Map<string, fs.FSWatcher>();
  private changes = 0;
  /** The events since change number `loggedFrom` (the event numbered n is events[n - loggedFrom - 1]). */
  private events: (WatchEvent | undefined)[] = [];
  private loggedFrom = 0;
  /** A watch failed or the folder limit was reached: no token until the next walk rebuilds them. */
  private broken = false;
  /** Why the last walk got no token ('' when it got one). */
  problem = '';
  /** Distinguishes this watch's tokens from another process's or another root's. */
  private readonly epoch = randomBytes(6).toString('hex');

  constructor(
    private readonly maxFolders: number,
    private readonly now: () => number = Date.now,
  ) {}

  begin(): WatchMark {
    if (this.broken) {
      this.closeAll();
      this.broken = false;
      this.problem = '';
    }
    return { changes: this.changes, folders: new Set(), startedMs: this.now() };
  }

  /** Watch `absolutePath` (a folder the walk is about to read) if it is not watched yet. */
  folder(mark: WatchMark, absolutePath: string): void {
    mark.folders.add(absolutePath);
    if (this.broken || this.watchers.has(absolutePath)) return;
    if (this.watchers.size >= this.maxFolders) {
      this.broken = true;
      this.problem = `more than ${this.maxFolders} folders to watch (ANALYSIS_MAX_WATCHED_FOLDERS)`;
      return;
    }
    try {
      // persistent: false: a watch never keeps the process alive on shutdown.
      const watcher = fs.watch(absolutePath, { persistent: false }, (kind, name) => {
        this.changes++;
        this.log(name ? { path: path.join(absolutePath, name.toString()), kind: kind === 'change' ? 'change' : 'rename' } : undefined);
      });
      watcher.on('error', (err) => {
        // The folder went away or the watch died: count it as a change, and
        // rebuild the watches on the next walk.
        this.changes++;
        this.log(undefined);
        this.broken = true;
        this.problem = `a folder's watch failed: ${err.message}`;
      });
      this.watchers.set(absolutePath, watcher);
    } catch (err) {
      // Out of inotify watches (ENOSPC), or the folder vanished: no token.
      this.broken = true;
      this.problem = `could not watch a folder: ${(err as Error).message}`;
    }
  }

  /** The token for the scan `mark` began, for requests made with `key` (the scan's settings); '' when none holds. */
  finish(mark: WatchMark, key: string): string {
    // Folders the walk no longer reads (removed, now ignored) need no watch.
    for (const [folder, watcher] of this.watchers) {
      if (!mark.folders.has(folder)) {
        watcher.close();
        this.watchers.delete(folder);
      }
    }
    if (this.broken || mark.folders.size === 0) return '';
    return `${this.epoch}.${mark.changes}.${mark.startedMs}.${key}`;
  }

  /** Whether nothing the scan of `token` walked has changed since it began. */
  unchangedSince(token: string, key: string): boolean {
    const held = this.parse(token, key);
    return held !== undefined && held.changes === this.changes;
  }

  /**
   * What the watched folders reported since the scan of `token` began, and
   * the token that stands for a scan which has taken those events in (the
   * same walk's age: a token never outlives MAX_TOKEN_AGE_MS from its walk).
   * undefined when the token does not hold, a watch failed or an event named
   * no entry, or more events came than are kept: then only a walk tells.
   */
  writesSince(token: string, key: string): { events: WatchEvent[]; next: string } | undefined {
    const held = this.parse(token, key);
    if (held === undefined || held.changes < this.loggedFrom) return undefined;
    const logged = this.events.slice(held.changes - this.loggedFrom);
    const events = logged.filter((e): e is WatchEvent => e !== undefined);
    if (events.length !== logged.length || logged.length !== this.changes - held.changes) return undefined;
    return { events, next: `${this.epoch}.${this.changes}.${held.startedMs}.${key}` };
  }

  private parse(token: string, key: string): { changes: number; startedMs: number } | undefined {
    if (token === '' || this.broken) return undefined;
    const parts = token.split('.');
    if (parts.length < 4 || parts[0] !== this.epoch || parts.slice(3).join('.') !== key) return undefined;
    const changes = Number(parts[1]);
    const startedMs = Number(parts[2]);
    if (!Number.isInteger(changes) || changes > this.changes || this.now() - startedMs > MAX_TOKEN_AGE_MS) return undefined;
    return { changes, startedMs };
  }

  /** Logs one event (undefined: one that named no entry, which no token survives). */
  private log(event: WatchEvent | undefined): void {
    if (this.events.length >= MAX_LOGGED_EVENTS) {
      this.events = [];
      this.loggedFrom = this.changes - 1;
    }
    this.events.push(event);
  }

  get watchedFolders(): number {
    return this.watchers.size;
  }

  closeAll(): void {
    for (const watcher of this.watchers.values()) watcher.close();
    this.watchers.clear();
  }
}
