import { readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { configSourceFiles, TRUST_ENV } from "@toolbelt/core/config-paths";
import { parseFast } from "./fast-args.js";

// `toolbelt tools` and `toolbelt run TOOL --help` with nothing that could change the answer print
// what the build wrote down (dist/tool-output.json, from live sessions with the default config)
// without loading @toolbelt/core's index (zod included), yargs or any family: bin.ts asks here
// first. Whenever a config source, a trust setting or an unusual flag could change the answer, it
// declines and the CLI takes its usual path — a miss only costs the time this saves.

/** The packages whose code decides what a session binds: core and every built-in family. */
export const MANIFEST_PACKAGES = [
  "@toolbelt/core",
  "@toolbelt/files",
  "@toolbelt/edit",
  "@toolbelt/shell",
  "@toolbelt/lsp",
  "@toolbelt/ui",
  "@toolbelt/projects",
  "@toolbelt/mcp",
];

const HERE = path.dirname(fileURLToPath(import.meta.url));

/**
 * Where `name`'s package.json is, found as Node finds a package for this file: in the node_modules
 * folder of this directory or of the nearest parent that has the package. A plain walk of stats,
 * not require.resolve: setting up the CommonJS resolver was most of what the fingerprint cost a cold
 * start. A layout without node_modules folders (Yarn PnP) finds nothing, and the CLI loads families.
 */
function packageJsonOf(name: string, walks: Map<string, string[]>): string | undefined {
  for (const dir of scopeDirs(name, walks)) {
    const file = path.join(dir, "node_modules", name, "package.json");
    if (statSync(file, { throwIfNoEntry: false })?.isFile()) return file;
  }
  return undefined;
}

/** The folders from HERE up whose node_modules has `name`'s scope folder, nearest first (one walk per scope). */
function scopeDirs(name: string, walks: Map<string, string[]>): string[] {
  const scope = name.startsWith("@") ? name.slice(0, name.indexOf("/")) : "";
  let dirs = walks.get(scope);
  if (!dirs) {
    dirs = [];
    for (let dir = HERE; ; dir = path.dirname(dir)) {
      if (statSync(path.join(dir, "node_modules", scope), { throwIfNoEntry: false })?.isDirectory())
        dirs.push(dir);
      if (path.dirname(dir) === dir) break;
    }
    walks.set(scope, dirs);
  }
  return dirs;
}

/**
 * Each package's version and the total size of its built files. The families are separate npm
 * packages: one upgraded (or rebuilt alone in the workspace) after the manifest was written could
 * bind other tools, so a manifest whose packages differ is not used. A few stats, no hashing: the
 * version is what changes on every release; the sizes catch a rebuild in the workspace.
 */
export function packageFingerprint(names: readonly string[] = MANIFEST_PACKAGES): Record<string, string> {
  const out: Record<string, string> = {};
  const walks = new Map<string, string[]>();
  for (const name of names) {
    try {
      // Located, not resolved through the module loader: locating a package.json is not loading the
      // package, and loader hooks (the tests that prove what a run loads) should not see it as such.
      const pkgFile = packageJsonOf(name, walks);
      if (!pkgFile) throw new Error(`${name} not found`);
      const { version } = JSON.parse(readFileSync(pkgFile, "utf8")) as { version?: string };
      const dist = path.join(path.dirname(pkgFile), "dist");
      let size = 0;
      for (const file of readdirSync(dist))
        if (file.endsWith(".js")) size += statSync(path.join(dist, file)).size;
      out[name] = `${version}:${size}`;
    } catch {
      out[name] = "unresolved";
    }
  }
  return out;
}

/** Whether the packages installed now are the ones a manifest was made from. */
export function samePackages(
  recorded: Record<string, string>,
  names: readonly string[] = MANIFEST_PACKAGES,
): boolean {
  const now = packageFingerprint(names);
  return names.every((name) => now[name] !== "unresolved" && now[name] === recorded[name]);
}

/**
 * `dist/tool-output/index.json`, written by `scripts/tool-manifest.mjs` beside the manifest. The files
 * it names hold the exact text `tools` prints for each profile and format, and `run TOOL --help`
 * for each bound tool (one JSON map per profile).
 */
export interface ToolOutputIndex {
  version: 1;
  /** As {@link packageFingerprint} saw them at build time. */
  packages: Record<string, string>;
  /** Profile → format → file holding the stdout of `toolbelt tools --format FORMAT --profile PROFILE`. */
  tools: Record<string, Record<string, string>>;
  /** Profile → file holding `{ [tool]: stdout of toolbelt run TOOL --help --profile PROFILE }`. */
  help: Record<string, string>;
}

/** `toolbelt run TOOL --help`: what the tool does and the input it takes. */
export function toolHelpText(tool: string, description: string, schema: unknown): string {
  return `toolbelt run ${tool} --input JSON\n\n${description}\n\n${describeInput(schema)}\nInput schema:\n${JSON.stringify(schema, null, 2)}\n\nFlags: toolbelt run --help\n`;
}

type JsonSchemaLike = {
  properties?: Record<string, { type?: unknown; description?: string; default?: unknown }>;
  required?: string[];
};

/** One line per input field: name, type, required or default, description. */
function describeInput(schema: unknown): string {
  const s = schema as JsonSchemaLike;
  const lines = Object.entries(s.properties ?? {}).map(([name, p]) => {
    const type = Array.isArray(p.type) ? p.type.join("|") : typeof p.type === "string" ? p.type : "value";
    const need =
      s.required?.includes(name) && p.default === undefined
        ? "required"
        : p.default !== undefined
          ? `default ${JSON.stringify(p.default)}`
          : "optional";
    return `  ${name} (${type}, ${need})${p.description ? `: ${p.description}` : ""}\n`;
  });
  return lines.length ? `Input fields:\n${lines.join("")}` : "Input: {} (no fields)\n";
}

// Flags that cannot change what is bound: any other (--config, --model, --allow, --trust, --input…)
// sends the line down the usual path.
const NEUTRAL_FLAGS = new Set(["root", "profile", "format"]);

function onlyNeutralFlags(argv: readonly string[]): boolean {
  return argv.every((token) => {
    if (!token.startsWith("--")) return true;
    const eq = token.indexOf("=");
    return NEUTRAL_FLAGS.has(eq < 0 ? token.slice(2) : token.slice(2, eq));
  });
}

/** The question a command line asks, when it is one this module can answer. */
function questionOf(
  argv: readonly string[],
):
  | { kind: "tools"; root: string; profile: string; format: string }
  | { kind: "help"; root: string; profile: string; tool: string }
  | undefined {
  if (argv[0] === "tools") {
    const fast = parseFast(argv);
    if (!fast || !onlyNeutralFlags(argv)) return undefined;
    const { root, profile, format } = fast.args as { root: string; profile?: string; format: string };
    return { kind: "tools", root, profile: profile ?? "default", format };
  }
  if (argv[0] !== "run") return undefined;
  // As cli.ts's takeToolHelp: the first help flag goes; what is left must be a plain `run TOOL`.
  const help = argv.findIndex((a) => a === "--help" || a === "-h");
  if (help < 0) return undefined;
  const rest = argv.filter((_, i) => i !== help);
  const fast = parseFast(rest);
  if (!fast || !onlyNeutralFlags(rest)) return undefined;
  const { root, profile, tool } = fast.args as { root: string; profile?: string; tool: string };
  return { kind: "help", root, profile: profile ?? "default", tool };
}

/** Whether any environment setting could change the answer (or make the usual path fail). */
function environmentMatters(env: NodeJS.ProcessEnv): boolean {
  return (
    env.TOOLBELT_NO_MANIFEST === "1" ||
    // Trust with no project files changes nothing today; the fast path stays out of it all the same.
    !!env[TRUST_ENV] ||
    // cli.ts's checkEnvironment refuses a misspelt engine: that answer is the usual path's to give.
    !!env.TOOLBELT_SEARCH_ENGINE?.trim()
  );
}

/**
 * Whether `root` is a directory. One that is not (a mistyped --root) is the usual path's to refuse:
 * a live session answers ENOENT, and the build's text would have printed the default tools.
 */
export function isDirectory(root: string): boolean {
  try {
    return statSync(root, { throwIfNoEntry: false })?.isDirectory() === true;
  } catch {
    return false;
  }
}

/** Whether any file the config loader reads exists (or cannot be checked) for this root. */
export function configExists(root: string, env: NodeJS.ProcessEnv): boolean {
  for (const file of configSourceFiles(root, env)) {
    try {
      if (statSync(file, { throwIfNoEntry: false }) !== undefined) return true;
    } catch {
      // EACCES, ENOTDIR…: the loader would have something to say; let it.
      return true;
    }
  }
  return false;
}

const OUTPUT_DIR = new URL("./tool-output/", import.meta.url);

function readIndex(): ToolOutputIndex | undefined {
  try {
    const raw = JSON.parse(readFileSync(new URL("index.json", OUTPUT_DIR), "utf8")) as { version?: unknown };
    return raw.version === 1 ? (raw as ToolOutputIndex) : undefined;
  } catch {
    return undefined;
  }
}

/** An own string property (a name like "__proto__" from the command line finds nothing). */
function own<T>(record: Record<string, T> | undefined, key: string): T | undefined {
  return record && Object.hasOwn(record, key) ? record[key] : undefined;
}

function readAnswer(index: ToolOutputIndex, question: NonNullable<ReturnType<typeof questionOf>>) {
  try {
    if (question.kind === "tools") {
      const file = own(own(index.tools, question.profile), question.format);
      return typeof file === "string" ? readFileSync(new URL(file, OUTPUT_DIR), "utf8") : undefined;
    }
    const file = own(index.help, question.profile);
    if (typeof file !== "string") return undefined;
    const help = JSON.parse(readFileSync(new URL(file, OUTPUT_DIR), "utf8")) as Record<string, unknown>;
    const text = own(help, question.tool);
    return typeof text === "string" ? text : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The text `argv` would print, taken from the build, or undefined when the CLI must work it out.
 * `env` is the process environment (a parameter for the tests).
 */
export function answerFromBuild(
  argv: readonly string[],
  env: NodeJS.ProcessEnv = process.env,
): string | undefined {
  if (environmentMatters(env)) return undefined;
  const question = questionOf(argv);
  if (!question) return undefined;
  const index = readIndex();
  if (!index) return undefined;
  const root = path.resolve(question.root);
  if (!isDirectory(root) || configExists(root, env)) return undefined;
  if (!samePackages(index.packages ?? {})) return undefined;
  return readAnswer(index, question);
}
