// Writes dist/oneshot.cjs, dist/oneshot.cjs.cache and dist/oneshot.json: the one-shot `run` of a
// files-family tool as one CommonJS file with V8's code cache for it (see src/oneshot.ts).
//
// Node 20 has no compile cache for ES modules, and a cold `run read_file` spent about a third of its
// time compiling them. CommonJS source compiled through `vm.Script` can take `cachedData`: V8 then
// deserialises the compiled functions instead of parsing and compiling them. The bundle is the CLI's
// own code (cli.ts and what its `run` path imports: core, files, bridge, every family's contrib
// module), built from the same sources, so it runs the same policy; what a files-family run never
// loads (the other families, yargs, the MCP server) is replaced by a module that throws, so the
// bundle cannot load a second copy of core beside its own. Packages' third-party dependencies are
// not copied in: each is required at run time from the package that depends on it, as Node would.
//
// The cache is made here, at build time, by running the bundle on a few calls in a fresh process,
// and it is only ever read at run time: V8 checks its version, flags and the source's length, not
// the code, so a cache anyone could write would be code anyone could run. It is as trusted as dist/.
import { execFileSync } from "node:child_process";
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { isBuiltin } from "node:module";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { build } from "esbuild";

const PKG = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const DIST = path.join(PKG, "dist");
const OUT = path.join(DIST, "oneshot.cjs");

// Never part of a files-family run (cli.ts reaches them for other commands, other families or an
// interactive terminal): a module that throws keeps them, and a second copy of core, out.
const LEFT_OUT = [
  /^@toolbelt\/(edit|shell|lsp|ui|projects|mcp|console)$/,
  /^yargs$/,
  /^\.\/(serve-mcp|serve-http|checkpoints-command)\.js$/,
];

/** The package a file belongs to: its nearest package.json's directory and name. */
const owners = new Map();
function ownerOf(file) {
  for (let dir = path.dirname(file); ; dir = path.dirname(dir)) {
    if (owners.has(dir)) return owners.get(dir);
    let name;
    try {
      name = JSON.parse(readFileSync(path.join(dir, "package.json"), "utf8")).name;
    } catch {
      if (path.dirname(dir) === dir) throw new Error(`no package.json above ${file}`);
      continue;
    }
    const owner = { dir, name };
    owners.set(dir, owner);
    return owner;
  }
}

// Locates an installed package as src/fast-tools.ts's fingerprint does (node_modules folders from
// the bundle's directory up), then where Node would have loaded its files from (the real path).
const BANNER = `"use strict";
const __tbDirs = new Map();
function __tbPackageDir(name) {
  let found = __tbDirs.get(name);
  if (found !== undefined) return found;
  const fs = require("node:fs"), path = require("node:path");
  for (let dir = __dirname; ; dir = path.dirname(dir)) {
    const file = path.join(dir, "node_modules", name, "package.json");
    if (fs.statSync(file, { throwIfNoEntry: false })?.isFile()) { found = fs.realpathSync(path.dirname(file)); break; }
    if (path.dirname(dir) === dir) throw new Error("toolbelt: the one-shot bundle cannot find " + name);
  }
  __tbDirs.set(name, found);
  return found;
}
function __tbPackageUrl(name, file) {
  return require("node:url").pathToFileURL(require("node:path").join(__tbPackageDir(name), file)).href;
}
function __tbRequireFrom(name, specifier) {
  return require("node:module").createRequire(require("node:path").join(__tbPackageDir(name), "package.json"))(specifier);
}`;

const oneshot = {
  name: "toolbelt-oneshot",
  setup(b) {
    b.onResolve({ filter: /.*/ }, (args) => {
      if (args.kind === "entry-point") return undefined;
      if (LEFT_OUT.some((re) => re.test(args.path))) return { path: args.path, namespace: "left-out" };
      if (isBuiltin(args.path)) return { path: args.path, external: true };
      if (args.path.startsWith(".") || path.isAbsolute(args.path)) return undefined;
      if (args.path.startsWith("@toolbelt/")) return undefined;
      // A third-party package: required at run time from the package that imports it.
      const owner = ownerOf(args.importer);
      if (owner.name === "@toolbelt/toolbelt") return { path: args.path, external: true };
      return { path: `${owner.name} ${args.path}`, namespace: "required" };
    });
    b.onLoad({ filter: /.*/, namespace: "left-out" }, (args) => ({
      contents: `throw new Error(${JSON.stringify(
        `toolbelt: internal error: the one-shot run reached ${args.path}, which its bundle leaves out (TOOLBELT_NO_ONESHOT=1 avoids the bundle; please report this)`,
      )});`,
      loader: "js",
    }));
    b.onLoad({ filter: /.*/, namespace: "required" }, (args) => {
      const [owner, specifier] = args.path.split(" ");
      return {
        contents: `module.exports = __tbRequireFrom(${JSON.stringify(owner)}, ${JSON.stringify(specifier)});`,
        loader: "js",
      };
    });
    // import.meta.url names the file as Node would have loaded it: the bundle itself for this
    // package's sources (they sit in dist/ as the bundle does), the installed file for the others.
    b.onLoad({ filter: /\.(ts|js|mjs)$/ }, (args) => {
      const source = readFileSync(args.path, "utf8");
      if (!source.includes("import.meta")) return undefined;
      const owner = ownerOf(args.path);
      const url =
        owner.name === "@toolbelt/toolbelt"
          ? `require("node:url").pathToFileURL(__filename).href`
          : `__tbPackageUrl(${JSON.stringify(owner.name)}, ${JSON.stringify(
              path.relative(owner.dir, args.path).split(path.sep).join("/"),
            )})`;
      const contents = source.replaceAll("import.meta.url", `(${url})`);
      if (contents.includes("import.meta")) throw new Error(`${args.path}: import.meta other than .url`);
      return { contents, loader: args.path.endsWith(".ts") ? "ts" : "js" };
    });
  },
};

// ASCII only, so the run reads each file as latin1 and V8 keeps it one byte per character: a single
// character above 0x7f made the whole 800 KB bundle a UTF-16 string, decoded and scanned at twice
// the size. esbuild escapes strings, regexes and names (charset "ascii"); what it leaves is in the
// comments it keeps, where an escape means the same.
const asciiOnly = (file) =>
  writeFileSync(
    file,
    readFileSync(file, "utf8").replace(
      /[^\0-\x7f]/g,
      (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`,
    ),
  );

const bundle = (entry, outfile) =>
  build({
    entryPoints: [path.join(PKG, "src", entry)],
    outfile,
    bundle: true,
    format: "cjs",
    platform: "node",
    target: "node20",
    banner: { js: BANNER },
    plugins: [oneshot],
    metafile: true,
    logLevel: "warning",
    logOverride: { "empty-import-meta": "error" },
  });
const inputsOf = async (entry, outfile) => Object.keys((await bundle(entry, outfile)).metafile.inputs);
const took = (inputs, re) => inputs.find((i) => re.test(i));

const inputs = await inputsOf("oneshot-entry.ts", OUT);
asciiOnly(OUT);
for (const forbidden of [
  /node_modules\/zod\//,
  /\/(edit|shell|lsp|ui|projects|mcp|console)\/dist\/index\.js$/,
])
  if (took(inputs, forbidden)) throw new Error(`the one-shot bundle took in ${took(inputs, forbidden)}`);
// The gate bin/toolbelt.js asks first: light, no core index (zod) in it.
const gate = await inputsOf("oneshot.ts", path.join(DIST, "oneshot-gate.cjs"));
asciiOnly(path.join(DIST, "oneshot-gate.cjs"));
if (took(gate, /\/core\/dist\/index\.js$/)) throw new Error("the one-shot gate took in core's index");
// What bin/toolbelt.js compiles the gate with (from the gate's own code cache): node: modules only.
const loader = await inputsOf("oneshot-load.ts", path.join(DIST, "oneshot-load.cjs"));
asciiOnly(path.join(DIST, "oneshot-load.cjs"));
if (loader.length !== 1) throw new Error(`the one-shot loader took in ${loader.join(", ")}`);

// What the bundle serves: the tools the manifest gives the files family that load no other family.
const manifest = JSON.parse(readFileSync(path.join(DIST, "tool-manifest.json"), "utf8"));
const { familiesFor, packageFingerprint, ONESHOT_PACKAGES } = await import(
  pathToFileURL(path.join(DIST, "oneshot.js")).href
);
const files = Object.entries(manifest.families)
  .filter(([tool, family]) => family === "files" && familiesFor(family, false, tool)?.length === 1)
  .map(([tool]) => tool)
  .sort();

// Written before the caches: the gate's warm-up reads it.
writeFileSync(
  path.join(DIST, "oneshot.json"),
  `${JSON.stringify({ version: 1, packages: packageFingerprint(ONESHOT_PACKAGES), files })}\n`,
);
// The cache, from a fresh process so it holds what a cold run compiles (and nothing of this one).
const cacheFile = path.join(DIST, "oneshot.cjs.cache");
rmSync(cacheFile, { force: true });
rmSync(path.join(DIST, "oneshot-gate.cjs.cache"), { force: true });
// Its stdout is the warm-up calls' answers (the CLI writes them to the descriptor): discarded.
execFileSync(process.execPath, [path.join(PKG, "scripts", "oneshot-cache.mjs")], {
  stdio: ["ignore", "ignore", "inherit"],
});

const kb = (f) => `${Math.round(readFileSync(f).length / 1024)} KiB`;
console.log(
  `oneshot: ${kb(OUT)} bundle, ${kb(cacheFile)} code cache (gate: ${kb(`${path.join(DIST, "oneshot-gate.cjs")}.cache`)}), ${files.length} files-family tools`,
);
