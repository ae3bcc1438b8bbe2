import {
  closeSync,
  constants,
  fstatSync,
  openSync,
  readdirSync,
  readSync,
  realpathSync,
  statSync,
} from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import type { FileSystemHost, RuntimeDirEntry } from "ts-morph";
import * as tsMorph from "ts-morph";
import { type ProjectFiles, readProjectFileSync } from "./project-files.js";

// ts-morph exports its not-found errors at run time but not in its types; it tells a missing file
// from a failure by them (`instanceof`, or `code: "ENOENT"`).
type NotFound = new (path: string) => Error;
const exported = tsMorph as unknown as { FileNotFoundError?: NotFound; DirectoryNotFoundError?: NotFound };
class Missing extends Error {
  readonly code = "ENOENT";
}
const FileNotFound: NotFound = exported.FileNotFoundError ?? Missing;
const DirectoryNotFound: NotFound = exported.DirectoryNotFoundError ?? Missing;

function isInside(dir: string, p: string): boolean {
  return p === dir || p.startsWith(dir.endsWith(path.sep) ? dir : dir + path.sep);
}

let ownTypescript: string | null | undefined;
/** The folder of toolbelt's own `typescript` package (real path): read-only, like ts-morph's lib files. */
function ownTypescriptDir(): string | undefined {
  if (ownTypescript === undefined) {
    try {
      ownTypescript = realpathSync(
        path.dirname(createRequire(import.meta.url).resolve("typescript/package.json")),
      );
    } catch {
      ownTypescript = null;
    }
  }
  return ownTypescript ?? undefined;
}

const READ_FLAGS = constants.O_RDONLY | (constants.O_NOFOLLOW ?? 0) | (constants.O_NONBLOCK ?? 0);
const GLOB_MAGIC = /[*?[\]{}!]/;

/**
 * The ts-morph fallback's whole view of the disk. The fallback runs in process, outside the sandbox
 * language servers get, and a project's tsconfig can point it anywhere (`include`, `files`, `paths`,
 * `rootDirs`, `typeRoots`, `extends`, imports through a symlinked folder): so it answers only for paths
 * whose real path is inside the root — read through core's checked open, regular files within
 * `limits.fileMaxBytes` — and for toolbelt's own `typescript` package (ts-morph's lib files are in
 * memory). Everything else does not exist. It never writes.
 */
export class RootFileSystem implements FileSystemHost {
  readonly #files: ProjectFiles;

  constructor(files: ProjectFiles) {
    this.#files = files;
  }

  /** The real path when `p` may be read: inside the root, or in toolbelt's typescript package. */
  #allowed(p: string): { real: string; own: boolean } | undefined {
    const inside = this.#files.inside(p);
    if (inside) return inside.exists ? { real: inside.abs, own: false } : undefined;
    const own = ownTypescriptDir();
    if (!own) return undefined;
    let real: string;
    try {
      real = realpathSync(p);
    } catch {
      return undefined;
    }
    return isInside(own, real) ? { real, own: true } : undefined;
  }

  #stat(p: string): ReturnType<typeof statSync> | undefined {
    const allowed = this.#allowed(p);
    if (!allowed) return undefined;
    try {
      return statSync(allowed.real);
    } catch {
      return undefined;
    }
  }

  isCaseSensitive(): boolean {
    return process.platform !== "win32" && process.platform !== "darwin";
  }

  readFileSync(filePath: string, _encoding?: string): string {
    const allowed = this.#allowed(filePath);
    let text: string | undefined;
    if (allowed) {
      try {
        text = allowed.own
          ? readOwn(allowed.real, this.#files.maxBytes)
          : readProjectFileSync(this.#files, allowed.real);
      } catch {
        text = undefined;
      }
    }
    if (text === undefined) throw new FileNotFound(filePath);
    return text;
  }

  async readFile(filePath: string, encoding?: string): Promise<string> {
    return this.readFileSync(filePath, encoding);
  }

  fileExistsSync(filePath: string): boolean {
    const stat = this.#stat(filePath);
    if (!stat?.isFile()) return false;
    return stat.size <= this.#files.maxBytes;
  }

  async fileExists(filePath: string): Promise<boolean> {
    return this.fileExistsSync(filePath);
  }

  directoryExistsSync(dirPath: string): boolean {
    return this.#stat(dirPath)?.isDirectory() ?? false;
  }

  async directoryExists(dirPath: string): Promise<boolean> {
    return this.directoryExistsSync(dirPath);
  }

  readDirSync(dirPath: string): RuntimeDirEntry[] {
    const allowed = this.#allowed(dirPath);
    let entries: import("node:fs").Dirent[];
    try {
      if (!allowed) throw new Error("not readable");
      entries = readdirSync(allowed.real, { withFileTypes: true });
    } catch {
      throw new DirectoryNotFound(dirPath);
    }
    return entries.map((entry) => {
      const name = path.join(dirPath, entry.name);
      if (!entry.isSymbolicLink())
        return { name, isFile: entry.isFile(), isDirectory: entry.isDirectory(), isSymlink: false };
      // A link is what its target is, when the target may be read; otherwise nothing.
      const stat = this.#stat(name);
      return {
        name,
        isFile: stat?.isFile() ?? false,
        isDirectory: stat?.isDirectory() ?? false,
        isSymlink: true,
      };
    });
  }

  realpathSync(p: string): string {
    const allowed = this.#allowed(p);
    if (!allowed) throw new FileNotFound(p);
    return allowed.real;
  }

  getCurrentDirectory(): string {
    return this.#files.root;
  }

  /** Only file paths (the fallback adds files it walked itself), never patterns. */
  globSync(patterns: ReadonlyArray<string>): string[] {
    const out: string[] = [];
    for (const pattern of patterns) {
      if (GLOB_MAGIC.test(pattern))
        throw new Error(`the ts-morph fallback takes file paths, not globs: ${pattern}`);
      const file = path.resolve(this.#files.root, pattern);
      if (this.fileExistsSync(file)) out.push(file);
    }
    return out;
  }

  async glob(patterns: ReadonlyArray<string>): Promise<string[]> {
    return this.globSync(patterns);
  }

  deleteSync(p: string): void {
    refuseWrite(p);
  }
  async delete(p: string): Promise<void> {
    refuseWrite(p);
  }
  writeFileSync(p: string): void {
    refuseWrite(p);
  }
  async writeFile(p: string): Promise<void> {
    refuseWrite(p);
  }
  mkdirSync(p: string): void {
    refuseWrite(p);
  }
  async mkdir(p: string): Promise<void> {
    refuseWrite(p);
  }
  moveSync(p: string): void {
    refuseWrite(p);
  }
  async move(p: string): Promise<void> {
    refuseWrite(p);
  }
  copySync(p: string): void {
    refuseWrite(p);
  }
  async copy(p: string): Promise<void> {
    refuseWrite(p);
  }
}

/** Edits reach the disk only through toolbelt's write path (lsp_rename), never through ts-morph. */
function refuseWrite(p: string): never {
  throw new Error(`the ts-morph fallback does not change files (${p})`);
}

/** A file of toolbelt's own typescript package: a regular file within the bound, or nothing. */
function readOwn(real: string, max: number): string | undefined {
  const fd = openSync(real, READ_FLAGS);
  try {
    const stat = fstatSync(fd);
    if (!stat.isFile() || stat.size > max) return undefined;
    const buffer = Buffer.allocUnsafe(stat.size);
    let total = 0;
    while (total < stat.size) {
      const n = readSync(fd, buffer, total, stat.size - total, null);
      if (n <= 0) break;
      total += n;
    }
    return buffer.subarray(0, total).toString("utf8");
  } finally {
    closeSync(fd);
  }
}
