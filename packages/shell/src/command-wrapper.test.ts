import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import type { Session } from "@toolbelt/core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { lacks } from "../../../test-support/capability.js";
import { landlockHere, openSession, removeDir, tempDir } from "./test-harness.js";

const here = landlockHere();
const noLandlock = lacks(here.lack, !here.ok && here.reason);

let root: string;
let outside: string;
const sessions: Session[] = [];

beforeAll(() => {
  root = tempDir("tb-wrap-root-");
  outside = tempDir("tb-wrap-outside-");
});
afterEach(async () => {
  await Promise.all(sessions.splice(0).map((s) => s.close()));
});
afterAll(() => {
  removeDir(root);
  removeDir(outside);
});

/** Runs a wrapped "language server" (a shell script here) to completion and returns its output. */
function runWrapped(s: Session, script: string): { status: number | null; out: string } {
  const spec = s.wrapCommand(
    { file: "/bin/sh", args: ["-c", script], cwd: root, env: { PATH: process.env.PATH ?? "/usr/bin:/bin" } },
    "language-server",
  );
  const r = spawnSync(spec.file, spec.args, {
    cwd: spec.cwd,
    env: spec.env as NodeJS.ProcessEnv,
    encoding: "utf8",
  });
  return { status: r.status, out: `${r.stdout}${r.stderr}` };
}

describe.skipIf(noLandlock)("session.wrapCommand for language servers", () => {
  it("runs the server under the shell's Landlock policy: the root is writable, outside it is not", async () => {
    const s = await openSession(root, {});
    sessions.push(s);
    const r = runWrapped(
      s,
      `echo ok > inside.txt; echo pwned > ${outside}/out.txt; echo "mark=$TOOLBELT_SHELL_MARK"`,
    );
    expect(readFileSync(path.join(root, "inside.txt"), "utf8")).toBe("ok\n");
    expect(existsSync(path.join(outside, "out.txt"))).toBe(false);
    expect(r.out).toMatch(/Permission denied/);
    expect(r.out).toMatch(/mark=\S+/);
  });

  it("shows protected paths read-only to the server", async () => {
    mkdirSync(path.join(root, "configs"), { recursive: true });
    writeFileSync(path.join(root, "configs", "app.json"), "{}\n");
    const s = await openSession(root, {});
    sessions.push(s);
    runWrapped(s, 'echo \'{"plugins":["x"]}\' > configs/app.json');
    expect(readFileSync(path.join(root, "configs", "app.json"), "utf8")).toBe("{}\n");
  });

  it("leaves MCP servers as configured", async () => {
    const s = await openSession(root, {});
    sessions.push(s);
    const spec = { file: "/bin/true", args: [], cwd: root, env: {} };
    expect(s.wrapCommand(spec, "mcp-server")).toEqual(spec);
  });
});
