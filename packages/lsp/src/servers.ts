import { existsSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { type ToolbeltConfig, ToolbeltError } from "@toolbelt/core";
import { findExecutable, isExecutable } from "@toolbelt/core/internal";

/** How a server's diagnostics are collected. */
export type DiagnosticsMode =
  /** `textDocument/publishDiagnostics` (and `textDocument/diagnostic` when the server offers it). */
  | "standard"
  /**
   * typescript-language-server pushes per diagnostic kind and stays silent when a clean file stays
   * clean, so "no problems" cannot be told from "not checked yet"; it does forward tsserver's
   * synchronous diagnostics requests, which answer for the document version just synced.
   */
  | "tsserver";

/** One language server: what to spawn and which files it serves. */
export type ServerSpec = {
  name: string;
  command: string;
  args: string[];
  /** Extensions with the leading dot, lower case. */
  extensions: string[];
  env?: Record<string, string>;
  initializationOptions?: unknown;
  settings?: unknown;
  builtin: boolean;
  diagnostics: DiagnosticsMode;
  /** How the binary was found, for doctor and error messages. */
  origin: string;
  /** What to call the server when it does not name itself in `initialize` (name and version). */
  detail?: string;
};

export const TS_EXTENSIONS = [".ts", ".tsx", ".mts", ".cts", ".js", ".jsx", ".mjs", ".cjs"];

const LANGUAGE_IDS: Record<string, string> = {
  ".ts": "typescript",
  ".mts": "typescript",
  ".cts": "typescript",
  ".tsx": "typescriptreact",
  ".js": "javascript",
  ".mjs": "javascript",
  ".cjs": "javascript",
  ".jsx": "javascriptreact",
  ".py": "python",
  ".rs": "rust",
  ".go": "go",
  ".json": "json",
  ".css": "css",
  ".html": "html",
  ".md": "markdown",
  ".sh": "shellscript",
  ".c": "c",
  ".h": "c",
  ".cpp": "cpp",
  ".hpp": "cpp",
  ".java": "java",
  ".rb": "ruby",
  ".php": "php",
  ".yaml": "yaml",
  ".yml": "yaml",
};

export function languageIdFor(file: string): string {
  const ext = path.extname(file).toLowerCase();
  return LANGUAGE_IDS[ext] ?? (ext.slice(1) || "plaintext");
}

/** Which TypeScript server the built-in spec uses. */
export type TsServerChoice = "typescript-language-server" | "tsgo";

const require = createRequire(import.meta.url);

function resolveFrom(specifier: string): string | undefined {
  try {
    return require.resolve(specifier);
  } catch {
    return undefined;
  }
}

/** Finds an executable on PATH (see core's `findExecutable`: never through a relative PATH entry). */
export const whichSync = findExecutable;

/** Whether `file` is `dir` or lies beneath it (both already real paths). */
export function isInside(file: string, dir: string): boolean {
  const rel = path.relative(dir, file);
  return rel === "" || (!rel.startsWith("..") && !path.isAbsolute(rel));
}

/**
 * Where a server may come from for one root: repo-local binaries and the project's own TypeScript
 * only when the project is trusted; PATH never into the root otherwise.
 */
export type ServerTrust = { root: string; trusted: boolean };

function pathLookup(command: string, trust: ServerTrust): string | undefined {
  return whichSync(command, trust.trusted ? {} : { outside: trust.root });
}

function packageVersion(specifier: string): string | undefined {
  const file = resolveFrom(`${specifier}/package.json`);
  if (!file) return undefined;
  try {
    return (JSON.parse(readFileSync(file, "utf8")) as { version?: string }).version;
  } catch {
    return undefined;
  }
}

/**
 * typescript-language-server: a trusted project's own `node_modules/.bin` copy first, then this
 * package's own dependency (run with this Node), then PATH.
 */
export function findTypescriptLanguageServer(
  trust?: ServerTrust,
): { command: string; args: string[]; origin: string } | undefined {
  if (trust?.trusted) {
    const local = path.join(trust.root, "node_modules", ".bin", "typescript-language-server");
    if (isExecutable(local)) return { command: local, args: ["--stdio"], origin: `project: ${local}` };
  }
  const pkgJson = resolveFrom("typescript-language-server/package.json");
  if (pkgJson) {
    try {
      const pkg = JSON.parse(readFileSync(pkgJson, "utf8")) as { bin?: string | Record<string, string> };
      const bin = typeof pkg.bin === "string" ? pkg.bin : pkg.bin?.["typescript-language-server"];
      if (bin) {
        const cli = path.resolve(path.dirname(pkgJson), bin);
        if (existsSync(cli)) return { command: process.execPath, args: [cli, "--stdio"], origin: cli };
      }
    } catch {
      // A broken install: try PATH.
    }
  }
  const onPath = trust
    ? pathLookup("typescript-language-server", trust)
    : whichSync("typescript-language-server");
  return onPath ? { command: onPath, args: ["--stdio"], origin: `PATH: ${onPath}` } : undefined;
}

/** TypeScript 7's native server (`tsgo --lsp --stdio`) from @typescript/native-preview, then PATH. */
export function findTsgo(
  trust?: ServerTrust,
): { command: string; args: string[]; origin: string } | undefined {
  const pkgJson = resolveFrom("@typescript/native-preview/package.json");
  if (pkgJson) {
    try {
      const pkg = JSON.parse(readFileSync(pkgJson, "utf8")) as { bin?: Record<string, string> };
      const bin = pkg.bin?.tsgo;
      if (bin) {
        const cli = path.resolve(path.dirname(pkgJson), bin);
        if (existsSync(cli))
          return { command: process.execPath, args: [cli, "--lsp", "--stdio"], origin: cli };
      }
    } catch {
      // fall through to PATH
    }
  }
  const onPath = trust ? pathLookup("tsgo", trust) : whichSync("tsgo");
  return onPath ? { command: onPath, args: ["--lsp", "--stdio"], origin: `PATH: ${onPath}` } : undefined;
}

/**
 * The tsserver.js typescript-language-server should load, or undefined to let it pick the project's
 * own `node_modules/typescript` — which it would do by itself, so an untrusted project always gets
 * ours named explicitly: a tsserver.js the model wrote must never run.
 */
export function tsserverPathFor(trust: ServerTrust): string | undefined {
  const own = path.join(trust.root, "node_modules", "typescript", "lib", "tsserver.js");
  if (trust.trusted && existsSync(own)) return undefined;
  return resolveFrom("typescript/lib/tsserver.js");
}

export function builtinTypescriptSpec(trust: ServerTrust, choice: TsServerChoice): ServerSpec | undefined {
  if (choice === "tsgo") {
    const found = findTsgo(trust);
    if (!found) return undefined;
    return {
      name: "tsgo",
      ...found,
      extensions: TS_EXTENSIONS,
      builtin: true,
      diagnostics: "standard",
    };
  }
  const found = findTypescriptLanguageServer(trust);
  if (!found) return undefined;
  const tsserver = tsserverPathFor(trust);
  const tslsVersion = found.origin.startsWith("project:")
    ? "from the project"
    : packageVersion("typescript-language-server");
  const tsVersion = tsserver ? packageVersion("typescript") : "from the project";
  return {
    name: "typescript",
    ...found,
    detail: `typescript-language-server${tslsVersion ? ` ${tslsVersion}` : ""}, TypeScript ${tsVersion ?? "?"}`,
    extensions: TS_EXTENSIONS,
    initializationOptions: {
      hostInfo: "toolbelt",
      // Headless use: no second (syntax-only) tsserver competing for the CPU, and no typings
      // installer fetching @types from the network behind the user's back. Measured here: cold
      // diagnostics 18 s → 12 s on a loaded 2-core machine.
      disableAutomaticTypingAcquisition: true,
      tsserver: { useSyntaxServer: "never", ...(tsserver ? { path: tsserver } : {}) },
    },
    builtin: true,
    diagnostics: "tsserver",
  };
}

/** Servers from config (`lsp.<name>`), in config order. */
export function configuredSpecs(config: ToolbeltConfig): ServerSpec[] {
  return Object.entries(config.lsp).map(([name, entry]) => ({
    name,
    command: entry.command,
    args: entry.args,
    extensions: entry.extensions.map((e) => (e.startsWith(".") ? e : `.${e}`).toLowerCase()),
    ...(entry.env ? { env: entry.env } : {}),
    ...(entry.initializationOptions !== undefined
      ? { initializationOptions: entry.initializationOptions }
      : {}),
    ...(entry.settings !== undefined ? { settings: entry.settings } : {}),
    builtin: false,
    diagnostics: "standard" as const,
    origin: "config",
  }));
}

/**
 * The absolute file to execute for a spec. A bare name is looked up on PATH here rather than by
 * `spawn`, which would also search relative PATH entries from inside the root; a name with a `/`
 * comes from trusted config and is taken relative to the root.
 */
export function resolveServerCommand(spec: ServerSpec, trust: ServerTrust): string {
  if (path.isAbsolute(spec.command)) return spec.command;
  if (spec.command.includes("/")) return path.resolve(trust.root, spec.command);
  const found = pathLookup(spec.command, trust);
  if (found) return found;
  throw new ToolbeltError(
    "EUNAVAILABLE",
    `could not start language server ${spec.name}: ${spec.command} not found on PATH${trust.trusted ? "" : " (PATH entries inside the untrusted project are skipped)"}`,
  );
}
