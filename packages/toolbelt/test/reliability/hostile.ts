import { createHash } from "node:crypto";
import { lstatSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import path from "node:path";

/** Paths an attacker (or a confused model) would try. */
export const HOSTILE_PATHS = [
  "..",
  "../",
  "../outside/sentinel.txt",
  "../../../../../../etc/passwd",
  "/etc/passwd",
  "/",
  "~",
  "~/.ssh/id_rsa",
  "link-out",
  "link-out/sentinel.txt",
  "link-out/new-file.txt",
  "link-file-out",
  "dangling-out",
  "src/../../outside",
  "src/\u0000/a.ts",
  "a\u0000b",
  "x".repeat(300),
  `${"deep/".repeat(200)}f.txt`,
  "%2e%2e/outside",
  "..\\outside",
  "src/a.ts\n../outside",
  "",
  ".",
  "./src",
  "src/a.ts",
  "name with spaces.txt",
  "ünïcödé/ファイル.txt",
  "\ud800",
];

/**
 * A project root beside an `outside` directory holding a sentinel, with symlinks from the root to
 * outside (a directory, a file, a dangling target) — what a fuzzer must never write through.
 */
export function makeHostileTree(base: string): { root: string; outside: string } {
  const root = path.join(base, "root");
  const outside = path.join(base, "outside");
  mkdirSync(path.join(root, "src"), { recursive: true });
  mkdirSync(outside, { recursive: true });
  writeFileSync(path.join(outside, "sentinel.txt"), "do not touch\n");
  writeFileSync(
    path.join(root, "src", "a.ts"),
    "export const a = 1;\nexport function f() {\n  return a;\n}\n",
  );
  writeFileSync(path.join(root, "README.md"), "# fixture\n\nhello world\n");
  symlinkSync(outside, path.join(root, "link-out"));
  symlinkSync(path.join(outside, "sentinel.txt"), path.join(root, "link-file-out"));
  symlinkSync(path.join(outside, "not-yet.txt"), path.join(root, "dangling-out"));
  return { root, outside };
}

/** Every entry under a directory with its type, mode and content hash: to prove nothing changed. */
export function snapshot(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (d: string) => {
    for (const name of readdirSync(d)) {
      const p = path.join(d, name);
      const st = lstatSync(p);
      const rel = path.relative(dir, p);
      if (st.isDirectory()) {
        out[rel] = `dir ${st.mode}`;
        walk(p);
      } else if (st.isFile()) {
        out[rel] = `file ${st.mode} ${createHash("sha1").update(readFileSync(p)).digest("hex")}`;
      } else {
        out[rel] = `other ${st.mode}`;
      }
    }
  };
  walk(dir);
  return out;
}
