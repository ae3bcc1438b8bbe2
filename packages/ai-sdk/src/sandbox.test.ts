// The AI SDK's sandbox interface backed by a real toolbelt session: real files, the real shell.
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import os from "node:os";
import path from "node:path";
import type { Session } from "@toolbelt/core";
import { createToolbelt } from "@toolbelt/toolbelt";
import { dynamicTool, generateText, isStepCount, jsonSchema } from "ai";
import { afterEach, describe, expect, it } from "vitest";
import { scriptedModel } from "./__fixtures__/scripted-model.js";
import { createToolbeltSandbox } from "./sandbox.js";

const dirs: string[] = [];
const sessions: Session[] = [];
afterEach(async () => {
  for (const s of sessions.splice(0)) await s.close();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function tempDir(prefix: string): string {
  const dir = realpathSync(mkdtempSync(path.join(os.tmpdir(), prefix)));
  dirs.push(dir);
  return dir;
}

async function sandboxIn(root: string, options: { allow?: string[]; config?: Record<string, unknown> } = {}) {
  const session = await createToolbelt({
    root,
    allow: options.allow ?? ["shell"],
    config: options.config ?? {},
  });
  sessions.push(session);
  return { session, sandbox: createToolbeltSandbox(session) };
}

const text = async (stream: ReadableStream<Uint8Array>) => new Response(stream).text();

describe("createToolbeltSandbox", () => {
  it("is what an AI SDK tool's experimental_sandbox runs commands with", async () => {
    const root = tempDir("tb-sandbox-");
    const { sandbox } = await sandboxIn(root);
    const bash = dynamicTool({
      description: "Runs a command.",
      inputSchema: jsonSchema({ type: "object", properties: { command: { type: "string" } } }),
      execute: async (input, { experimental_sandbox, abortSignal }) => {
        if (!experimental_sandbox) throw new Error("no sandbox");
        const { command } = input as { command: string };
        return experimental_sandbox.run({ command, ...(abortSignal ? { abortSignal } : {}) });
      },
    });
    const script = scriptedModel([
      () => ({ calls: [{ tool: "bash", input: { command: "pwd; echo oops >&2; exit 3" } }] }),
      () => ({ text: "ran" }),
    ]);
    const result = await generateText({
      model: script.model,
      tools: { bash },
      experimental_sandbox: sandbox,
      prompt: "run it",
      stopWhen: isStepCount(3),
    });
    expect(result.steps[0]?.toolResults[0]?.output).toEqual({
      exitCode: 3,
      stdout: `${root}\noops\n`,
      stderr: "",
    });
    expect(sandbox.description).toContain(root);
  });

  it("runs commands through the shell tool's policy, inside the root, without caller env", async () => {
    const root = tempDir("tb-sandbox-");
    mkdirSync(path.join(root, "sub"));
    const { sandbox } = await sandboxIn(root);
    expect(await sandbox.run({ command: "pwd", workingDirectory: "sub" })).toMatchObject({
      exitCode: 0,
      stdout: `${path.join(root, "sub")}\n`,
    });
    await expect(sandbox.run({ command: "pwd", workingDirectory: "/" })).rejects.toMatchObject({
      code: "EPATH_ESCAPE",
    });
    await expect(sandbox.run({ command: "env", env: { SECRET: "x" } })).rejects.toMatchObject({
      code: "EINVAL_INPUT",
    });
    const asking = await sandboxIn(root, { allow: [] });
    await expect(asking.sandbox.run({ command: "touch made.txt" })).rejects.toMatchObject({
      code: "EDENIED",
    });
    expect(existsSync(path.join(root, "made.txt"))).toBe(false);
  });

  it("reads files as text (line ranges), bytes and streams; null when missing; never outside the root", async () => {
    const root = tempDir("tb-sandbox-");
    const outside = tempDir("tb-outside-");
    writeFileSync(path.join(outside, "secret.txt"), "secret\n");
    writeFileSync(path.join(root, "lines.txt"), "one\ntwo\r\nthree\nfour");
    symlinkSync(path.join(outside, "secret.txt"), path.join(root, "leak.txt"));
    const { sandbox } = await sandboxIn(root);
    expect(await sandbox.readTextFile({ path: "lines.txt" })).toBe("one\ntwo\r\nthree\nfour");
    expect(await sandbox.readTextFile({ path: "lines.txt", startLine: 2, endLine: 3 })).toBe(
      "two\r\nthree\n",
    );
    expect(await sandbox.readTextFile({ path: "lines.txt", startLine: 4, endLine: 99 })).toBe("four");
    expect(Buffer.from((await sandbox.readBinaryFile({ path: "lines.txt" })) ?? []).toString()).toContain(
      "three",
    );
    const stream = await sandbox.readFile({ path: path.join(root, "lines.txt") });
    expect(stream && (await text(stream))).toBe("one\ntwo\r\nthree\nfour");
    expect(await sandbox.readTextFile({ path: "missing.txt" })).toBeNull();
    await expect(sandbox.readTextFile({ path: "leak.txt" })).rejects.toMatchObject({ code: "EPATH_ESCAPE" });
    await expect(sandbox.readFile({ path: "../x" })).rejects.toMatchObject({ code: "EPATH_ESCAPE" });
  });

  it("applies the file policy: an allowlist limits reads and writes", async () => {
    const root = tempDir("tb-sandbox-");
    writeFileSync(path.join(root, "private.env"), "TOKEN=1\n");
    const { sandbox } = await sandboxIn(root, { config: { tools: { file: { allowlist: ["^src/"] } } } });
    await expect(sandbox.readTextFile({ path: "private.env" })).rejects.toMatchObject({ code: "EDENIED" });
    await expect(sandbox.writeTextFile({ path: "notes.txt", content: "x" })).rejects.toMatchObject({
      code: "EDENIED",
    });
    await sandbox.writeTextFile({ path: "src/ok.txt", content: "fine" });
    expect(readFileSync(path.join(root, "src/ok.txt"), "utf8")).toBe("fine");
  });

  it("writes through the write path: parents made, encodings, limits, protected paths, never onto a directory", async () => {
    const root = tempDir("tb-sandbox-");
    mkdirSync(path.join(root, "dir"));
    const { sandbox } = await sandboxIn(root, { config: { limits: { fileWriteMaxBytes: 64 } } });
    await sandbox.writeTextFile({ path: "a/b/c.txt", content: "héllo" });
    expect(readFileSync(path.join(root, "a/b/c.txt"), "utf8")).toBe("héllo");
    await sandbox.writeTextFile({ path: "latin.txt", content: "é", encoding: "latin1" });
    expect([...readFileSync(path.join(root, "latin.txt"))]).toEqual([0xe9]);
    await sandbox.writeBinaryFile({ path: "bytes.bin", content: new Uint8Array([0, 1, 2]) });
    expect([...readFileSync(path.join(root, "bytes.bin"))]).toEqual([0, 1, 2]);
    await sandbox.writeFile({
      path: "streamed.txt",
      content: new Response("streamed").body as ReadableStream,
    });
    expect(readFileSync(path.join(root, "streamed.txt"), "utf8")).toBe("streamed");
    await expect(
      sandbox.writeFile({ path: "big.txt", content: new Response("x".repeat(100)).body as ReadableStream }),
    ).rejects.toMatchObject({ code: "ETOO_LARGE" });
    expect(existsSync(path.join(root, "big.txt"))).toBe(false);
    await expect(sandbox.writeTextFile({ path: ".mcp.json", content: "{}" })).rejects.toMatchObject({
      code: "EDENIED",
    });
    expect(existsSync(path.join(root, ".mcp.json"))).toBe(false);
    await expect(sandbox.writeTextFile({ path: "dir", content: "x" })).rejects.toThrow();
    await expect(
      sandbox.writeTextFile({ path: "x", content: "x", encoding: "klingon" }),
    ).rejects.toMatchObject({
      code: "EINVAL_INPUT",
    });
  });

  it("stats and lists (links as links, not followed out of the root), and deletes files only", async () => {
    const root = tempDir("tb-sandbox-");
    const outside = tempDir("tb-outside-");
    writeFileSync(path.join(outside, "hidden.txt"), "x");
    mkdirSync(path.join(root, "dir"));
    writeFileSync(path.join(root, "dir/file.txt"), "12345");
    symlinkSync("file.txt", path.join(root, "dir/link.txt"));
    symlinkSync(outside, path.join(root, "away"));
    const { sandbox } = await sandboxIn(root);
    expect(await sandbox.stat({ path: "dir/file.txt" })).toEqual({ type: "file", size: 5 });
    expect(await sandbox.stat({ path: "dir/link.txt" })).toEqual({ type: "file", size: 5 });
    expect(await sandbox.stat({ path: "dir" })).toMatchObject({ type: "directory" });
    expect(await sandbox.stat({ path: "nope" })).toBeNull();
    const entries = await sandbox.listDirectory({ path: "dir" });
    expect(entries?.sort((a, b) => a.name.localeCompare(b.name))).toEqual([
      { name: "file.txt", type: "file" },
      { name: "link.txt", type: "symlink" },
    ]);
    expect((await sandbox.listDirectory({ path: "." }))?.map((e) => e.name).sort()).toEqual(["away", "dir"]);
    expect(await sandbox.listDirectory({ path: "nope" })).toBeNull();
    await expect(sandbox.listDirectory({ path: "dir/file.txt" })).rejects.toMatchObject({ code: "ENOTDIR" });
    await expect(sandbox.listDirectory({ path: "away" })).rejects.toMatchObject({ code: "EPATH_ESCAPE" });
    await expect(sandbox.stat({ path: "away/hidden.txt" })).rejects.toMatchObject({ code: "EPATH_ESCAPE" });
    expect(await sandbox.deleteFile({ path: "dir/file.txt" })).toBe(true);
    expect(await sandbox.deleteFile({ path: "dir/file.txt" })).toBe(false);
    await expect(sandbox.deleteFile({ path: "dir" })).rejects.toThrow();
    expect(existsSync(path.join(root, "dir"))).toBe(true);
  });

  it("spawns a background command: its output streams, wait gives the exit code, kill ends it", async () => {
    const root = tempDir("tb-sandbox-");
    const { sandbox } = await sandboxIn(root);
    const proc = await sandbox.spawn({ command: "echo first; echo second; exit 4" });
    expect(proc.pid).toBeGreaterThan(0);
    expect(await text(proc.stdout)).toBe("first\nsecond\n");
    expect(await text(proc.stderr)).toBe("");
    expect(await proc.wait()).toEqual({ exitCode: 4 });

    const long = await sandbox.spawn({ command: "echo up; sleep 600" });
    const reader = long.stdout.getReader();
    expect(new TextDecoder().decode((await reader.read()).value)).toBe("up\n");
    await long.kill();
    await long.kill();
    expect((await long.wait()).exitCode).toBeGreaterThan(128);

    await expect(sandbox.spawn({ command: "cat", stdin: true })).rejects.toMatchObject({
      code: "EINVAL_INPUT",
    });
  });
});
