// Attacks through PDFs (issue 30 item 2), end to end through the built CLI: a PDF is a program as much
// as a document. A page of a few hundred kilobytes that inflates to hundreds of megabytes, and a page of
// millions of text operators, must end the read with an error naming the bound, never hang or take the
// session down; the parsing process is killed (none is left behind) and the next call is answered.
import { type ChildProcess, spawn } from "node:child_process";
import { readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { lacks } from "../../../../test-support/capability.js";
import { pdfDocument, pdfManyOperators } from "../../../../test-support/pdf-fixtures.js";
import { assertBuilt, BIN, REPO, tempRoot } from "../cli-harness.js";

const MiB = 1024 * 1024;
const noProc = lacks(
  "linux",
  process.platform !== "linux" && "the memory bound polls /proc, which only Linux has",
);

const dirs: string[] = [];
beforeAll(() => assertBuilt());
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/** A project holding `files`, with its limits lowered by `--config` (an untrusted project may lower them too). */
function project(
  files: Record<string, Buffer>,
  limits: Record<string, number>,
): { root: string; config: string } {
  const root = tempRoot("tb-pdf-bomb-");
  dirs.push(root);
  for (const [name, data] of Object.entries(files)) writeFileSync(path.join(root, name), data);
  const config = path.join(root, "limits.json");
  writeFileSync(config, JSON.stringify({ limits }));
  return { root, config };
}

/** The processes `pid` started that are still alive (Linux: /proc/PID/task/N/children). */
function childrenOf(pid: number): number[] {
  const tasks = readdirSync(`/proc/${pid}/task`);
  return tasks.flatMap((task) =>
    readFileSync(`/proc/${pid}/task/${task}/children`, "utf8")
      .trim()
      .split(/\s+/)
      .filter(Boolean)
      .map(Number),
  );
}

/** `toolbelt exec`, one call at a time: each answer is awaited before the next call is written. */
function execSession(root: string, config: string) {
  const child: ChildProcess = spawn(process.execPath, [BIN, "exec", "--root", root, "--config", config], {
    cwd: REPO,
    env: { ...process.env, NO_COLOR: "1", TOOLBELT_STATE_DIR: root },
    stdio: ["pipe", "pipe", "inherit"],
  });
  let buffer = "";
  const waiting: Array<(line: Record<string, unknown>) => void> = [];
  child.stdout?.setEncoding("utf8");
  child.stdout?.on("data", (chunk: string) => {
    buffer += chunk;
    for (let nl = buffer.indexOf("\n"); nl !== -1; nl = buffer.indexOf("\n")) {
      const line = buffer.slice(0, nl);
      buffer = buffer.slice(nl + 1);
      waiting.shift()?.(JSON.parse(line) as Record<string, unknown>);
    }
  });
  const exited = new Promise<number | null>((resolve) => child.on("close", (code) => resolve(code)));
  return {
    pid: child.pid as number,
    read(input: Record<string, unknown>): Promise<Record<string, unknown>> {
      return new Promise((resolve) => {
        waiting.push((answer) => resolve(answer.result as Record<string, unknown>));
        child.stdin?.write(`${JSON.stringify({ tool: "read_file", input })}\n`);
      });
    },
    close(): Promise<number | null> {
      child.stdin?.end();
      return exited;
    },
  };
}

describe.skipIf(noProc)("PDF bombs against read_file (built CLI, exec session)", () => {
  it("a page that inflates past limits.pdfMaxMemoryBytes: ETOO_LARGE, the parser killed, the session goes on", async () => {
    const { root, config } = project(
      {
        "bomb.pdf": pdfDocument([{ inflatedMiB: 512 }]),
        "late-bomb.pdf": pdfDocument(["Before the bomb", { inflatedMiB: 512 }]),
        "ok.pdf": pdfDocument(["Still answering"]),
      },
      { pdfMaxMemoryBytes: 256 * MiB },
    );
    // The bomb is small on disk: only its inflated content is large.
    expect(readFileSync(path.join(root, "bomb.pdf")).length).toBeLessThan(MiB);
    const session = execSession(root, config);
    try {
      const bomb = await session.read({ path: "bomb.pdf" });
      expect(bomb, JSON.stringify(bomb)).toMatchObject({
        kind: "error",
        code: "ETOO_LARGE",
        path: "bomb.pdf",
      });
      expect(String(bomb.message)).toMatch(/limits\.pdfMaxMemoryBytes \(268435456 bytes\)/);
      expect(childrenOf(session.pid)).toEqual([]);

      // A bomb after a readable page: that page is answered, and the result says where parsing stopped.
      const late = await session.read({ path: "late-bomb.pdf" });
      expect(late, JSON.stringify(late)).toMatchObject({
        kind: "pdf_content",
        pages: [{ page: 1, text: "Before the bomb" }],
        total_pages: 2,
        truncated: true,
        next_offset: 2,
        stopped: { bound: "memory", limit: 256 * MiB },
      });
      expect(childrenOf(session.pid)).toEqual([]);

      expect(await session.read({ path: "ok.pdf" })).toMatchObject({
        kind: "pdf_content",
        pages: [{ page: 1, text: "Still answering" }],
      });
    } finally {
      // exec exits 1 because a call answered an error; what matters is that it exited on its own.
      expect(await session.close()).toBe(1);
    }
  });

  it("a page of millions of text operators: ETIMEOUT at limits.pdfTimeoutMs, and the session goes on", async () => {
    const { root, config } = project(
      { "slow.pdf": pdfManyOperators(3_000_000), "ok.pdf": pdfDocument(["Still answering"]) },
      // The memory bound out of the way, so the time bound is the one that ends it.
      { pdfTimeoutMs: 1000, pdfMaxMemoryBytes: 8192 * MiB },
    );
    const session = execSession(root, config);
    try {
      const slow = await session.read({ path: "slow.pdf" });
      expect(slow, JSON.stringify(slow)).toMatchObject({ kind: "error", code: "ETIMEOUT", path: "slow.pdf" });
      expect(String(slow.message)).toMatch(/limits\.pdfTimeoutMs \(1000 ms\)/);
      expect(childrenOf(session.pid)).toEqual([]);
      expect(await session.read({ path: "ok.pdf" })).toMatchObject({
        kind: "pdf_content",
        pages: [{ page: 1, text: "Still answering" }],
      });
    } finally {
      // exec exits 1 because a call answered an error; what matters is that it exited on its own.
      expect(await session.close()).toBe(1);
    }
  });
});
