import { type ChildProcessWithoutNullStreams, spawn, spawnSync } from "node:child_process";
import { rmSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";
import readline from "node:readline";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { lacks, need } from "../../../../test-support/capability.js";
import { assertBuilt, BIN, cli, REPO, tempRoot } from "../cli-harness.js";

// The ignore-rule cache (walk.ts) keeps parsed .gitignore/.ignore/.rgignore files by inode, size,
// mtime and ctime. A rule file rewritten in place with text of the same size can keep all four: on
// a kernel before 6.13 two writes within one clock tick get the same timestamps, some file systems
// keep whole seconds, and a write through a shared mapping whose page is still dirty updates no
// timestamp at all. That last one is what this test uses, because it holds on every kernel: the
// rules change while the key does not. A listing or JS-engine search must then answer from the
// rules as they are now (as ripgrep, which reads them at every run, does), not from the cache.

const dirs: string[] = [];
beforeAll(() => assertBuilt());
afterAll(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

// Holds one shared writable mapping of the file and writes each stdin line (with its LF) at its start.
const MAPPER = `
import mmap, os, sys
fd = os.open(sys.argv[1], os.O_RDWR)
m = mmap.mmap(fd, os.fstat(fd).st_size)
print("mapped", flush=True)
for line in sys.stdin:
    data = line.rstrip("\\n").encode() + b"\\n"
    m[0:len(data)] = data
    print("written", flush=True)
`;

const python = spawnSync("python3", ["-c", "import mmap"], { encoding: "utf8" });
const skip =
  lacks("linux", process.platform !== "linux" && `this is ${process.platform}`) ||
  lacks(
    "python3",
    python.status !== 0 && `no python3 with mmap (${python.error?.message ?? python.stderr.trim()})`,
  );

/** A process answering one line per line written to it. */
function lines(child: ChildProcessWithoutNullStreams) {
  const it = readline.createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  return async (send?: string): Promise<string> => {
    if (send !== undefined) child.stdin.write(`${send}\n`);
    const next = await it.next();
    if (next.done) throw new Error("the process closed its output");
    return next.value as string;
  };
}

type Key = { ino: number; size: number; mtimeMs: number; ctimeMs: number };
const keyOf = (file: string): Key => {
  const st = statSync(file);
  return { ino: st.ino, size: st.size, mtimeMs: st.mtimeMs, ctimeMs: st.ctimeMs };
};

describe.skipIf(skip)("ignore rules rewritten in place, same size, same stat", () => {
  it("list_files and search_files (JS engine) answer from the rules as they are now", async (ctx) => {
    const root = tempRoot("tb-ignore-cache-");
    dirs.push(root);
    for (const name of ["a.log", "b.log", "c.txt"]) writeFileSync(path.join(root, name), "hit\n");
    const rules = path.join(root, ".gitignore");
    writeFileSync(rules, "a.log\n");

    const session = spawn(process.execPath, [BIN, "exec", "--root", root], {
      cwd: REPO,
      env: { ...process.env, NO_COLOR: "1", TOOLBELT_SEARCH_ENGINE: "js" },
      stdio: ["pipe", "pipe", "pipe"],
    });
    const mapper = spawn("python3", ["-c", MAPPER, rules], { stdio: ["pipe", "pipe", "pipe"] });
    try {
      const ask = lines(session);
      let id = 0;
      const call = async (tool: string, input: Record<string, unknown>) => {
        const answer = JSON.parse(await ask(JSON.stringify({ id: String(++id), tool, input }))) as {
          result: { entries?: Array<{ path: string }> };
        };
        return (answer.result.entries ?? []).map((e) => e.path).sort();
      };
      const listed = () => call("list_files", {});
      const found = () => call("search_files", { query: "hit" });
      const write = lines(mapper);
      expect(await write()).toBe("mapped");

      expect(await listed()).toEqual([".gitignore", "b.log", "c.txt"]);
      expect(await write("b.log")).toBe("written");
      expect(await listed()).toEqual([".gitignore", "a.log", "c.txt"]);
      expect(await found()).toEqual(["a.log", "c.txt"]);
      const before = keyOf(rules);

      // The page is still dirty and mapped writable: this write changes no timestamp.
      expect(await write("c.txt")).toBe("written");
      // The premise: the page was not written back in between (nothing to show if it was).
      need(
        ctx,
        "quiet-mmap-write",
        JSON.stringify(keyOf(rules)) !== JSON.stringify(before) && "the rewrite changed the rule file's stat",
      );
      expect(await listed()).toEqual([".gitignore", "a.log", "b.log"]);
      expect(await found()).toEqual(["a.log", "b.log"]);

      // ripgrep reads the rules at every run: both engines give the same answer.
      const viaRg = await cli(["run", "search_files", "--root", root, "--input", '{"query":"hit"}'], {
        env: { TOOLBELT_SEARCH_ENGINE: "ripgrep" },
      });
      const rg = JSON.parse(viaRg.stdout) as { engine?: string; entries: Array<{ path: string }> };
      if (rg.engine === "ripgrep") expect(rg.entries.map((e) => e.path).sort()).toEqual(["a.log", "b.log"]);
    } finally {
      session.stdin.end();
      mapper.stdin.end();
    }
  }, 60_000);
});
