// Tool-call hooks through the built CLI: command hooks named in config deny, rewrite input, add
// notes, and are bounded in time; the same config applies over `run`, `exec`, `serve --mcp` and
// `serve --http`.
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createToolbelt } from "../src/create.js";
import { BIN, jsonLines } from "./cli-harness.js";
import { type HookBench, hookBench, node, payload } from "./hooks-fixture.js";
import { startHttp } from "./serve-fixture.js";

let bench: HookBench;
let denyRm: string;
let denyRmExit2: string;
let rewrite: string;
let note: string;

const run = (args: string[], input?: string) => bench.run(args, input !== undefined ? { input } : {});
const configWith = (hooks: Record<string, unknown>) => bench.config(hooks);
const project = () => bench.project();
const env = () => bench.env();
const hook = (name: string, body: string) => bench.hook(name, body);

beforeAll(() => {
  bench = hookBench();
  denyRm = hook(
    "deny-rm.mjs",
    `if (/\\brm\\b/.test(call.input.command ?? "")) console.log(JSON.stringify({ decision: "deny", message: "rm is not allowed here (" + call.calledAs + ")" }));`,
  );
  denyRmExit2 = hook(
    "deny-rm-exit2.mjs",
    `if (/\\brm\\b/.test(call.input.command ?? "")) { process.stderr.write("no rm, said exit 2"); process.exit(2); }`,
  );
  rewrite = hook(
    "rewrite.mjs",
    `console.log(JSON.stringify({ input: { ...call.input, content: "// reviewed\\n" + call.input.content } }));`,
  );
  note = hook(
    "note.mjs",
    `console.log(JSON.stringify({ note: "after " + call.tool + ": " + call.payload.kind }));`,
  );
});

afterAll(() => bench.cleanup());

describe("command hooks (toolbelt run)", () => {
  it("a before hook denies `rm` with a message the model reads; other commands run", async () => {
    const root = project();
    const config = configWith({ before: [{ tools: ["shell"], ...node(denyRm) }] });
    const rm = await run([
      "run",
      "shell",
      "--root",
      root,
      "--config",
      config,
      "--allow",
      "shell",
      "--input",
      JSON.stringify({ command: "rm keep.txt" }),
    ]);
    expect(rm.code).toBe(1);
    expect(payload(rm)).toMatchObject({
      kind: "error",
      code: "EDENIED",
      message: "shell: rm is not allowed here (shell)",
    });
    expect(readFileSync(path.join(root, "keep.txt"), "utf8")).toBe("keep\n");
    const ls = await run([
      "run",
      "shell",
      "--root",
      root,
      "--config",
      config,
      "--allow",
      "shell",
      "--input",
      JSON.stringify({ command: "cat keep.txt" }),
    ]);
    expect(ls.code).toBe(0);
    expect(payload(ls)).toMatchObject({ kind: "shell_result", stdout: "keep\n" });
  });

  it("exit 2 denies with the hook's stderr as the message", async () => {
    const root = project();
    const config = configWith({ before: [{ tools: ["shell"], ...node(denyRmExit2) }] });
    const rm = await run([
      "run",
      "shell",
      "--root",
      root,
      "--config",
      config,
      "--allow",
      "shell",
      "--format",
      "text",
      "--input",
      JSON.stringify({ command: "rm -f keep.txt" }),
    ]);
    expect(rm.code).toBe(1);
    expect(rm.stdout).toContain("# Error: EDENIED");
    expect(rm.stdout).toContain("no rm, said exit 2");
    expect(readFileSync(path.join(root, "keep.txt"), "utf8")).toBe("keep\n");
  });

  it("a before hook rewrites the input; the tool writes what the hook handed on", async () => {
    const root = project();
    const config = configWith({ before: [{ tools: ["write_file"], ...node(rewrite) }] });
    const out = await run([
      "run",
      "write_file",
      "--root",
      root,
      "--config",
      config,
      "--input",
      JSON.stringify({ path: "src/a.ts", content: "export {};\n" }),
    ]);
    expect(out.code).toBe(0);
    expect(readFileSync(path.join(root, "src/a.ts"), "utf8")).toBe("// reviewed\nexport {};\n");
  });

  it("an after hook's note reaches the model-facing text; families and * match", async () => {
    const root = project();
    const config = configWith({ after: [{ families: ["files"], ...node(note) }] });
    const out = await run([
      "run",
      "read_file",
      "--root",
      root,
      "--config",
      config,
      "--format",
      "text",
      "--input",
      JSON.stringify({ path: "keep.txt" }),
    ]);
    expect(out.code).toBe(0);
    expect(out.stdout).toContain("keep");
    expect(out.stdout).toMatch(/\[hook\] node note\.mjs: after read_file: \w+/);
  });

  it("a hook that hangs is killed after timeout_ms and the call is denied (fail closed)", async () => {
    const root = project();
    const hang = hook("hang.mjs", "setInterval(() => {}, 1000);");
    const config = configWith({ before: [{ tools: ["*"], timeout_ms: 300, ...node(hang) }] });
    const out = await run([
      "run",
      "write_file",
      "--root",
      root,
      "--config",
      config,
      "--input",
      JSON.stringify({ path: "x.txt", content: "x" }),
    ]);
    expect(out.code).toBe(1);
    expect(payload(out)).toMatchObject({ code: "EDENIED", hook: "node hang.mjs" });
    expect(String(payload(out).message)).toContain("did not answer within 300 ms (killed)");
  });

  it("doctor lists the configured hooks", async () => {
    const root = project();
    const config = configWith({ before: [{ tools: ["shell"], ...node(denyRm) }] });
    const doctor = JSON.parse(
      (await run(["doctor", "--root", root, "--config", config, "--format", "json"])).stdout,
    ) as Array<Record<string, string>>;
    expect(doctor).toContainEqual(
      expect.objectContaining({ family: "hooks", name: "before node deny-rm.mjs", status: "ok" }),
    );
  });
});

describe("the same hooks over exec and serve --mcp", () => {
  it("exec: every call of the session goes through the hook", async () => {
    const root = project();
    const config = configWith({ before: [{ tools: ["shell"], ...node(denyRm) }] });
    const lines = [
      { id: "1", tool: "shell", input: { command: "rm keep.txt" } },
      { id: "2", tool: "shell", input: { command: "echo fine" } },
    ];
    const out = await run(
      ["exec", "--root", root, "--config", config, "--allow", "shell"],
      `${lines.map((l) => JSON.stringify(l)).join("\n")}\n`,
    );
    const results = jsonLines(out.stdout).filter((l) => "result" in l);
    expect(results[0]).toMatchObject({ id: "1", result: { code: "EDENIED" } });
    expect(results[1]).toMatchObject({ id: "2", result: { kind: "shell_result", stdout: "fine\n" } });
    expect(readFileSync(path.join(root, "keep.txt"), "utf8")).toBe("keep\n");
  });

  it("serve --mcp: a real MCP client gets the hook's denial as an error result", async () => {
    const root = project();
    const config = configWith({ before: [{ tools: ["shell"], ...node(denyRm) }] });
    const client = new Client({ name: "hooks-test", version: "1.0.0" });
    await client.connect(
      new StdioClientTransport({
        command: process.execPath,
        args: [BIN, "serve", "--mcp", "--root", root, "--config", config, "--allow", "shell"],
        env: env() as Record<string, string>,
        stderr: "pipe",
      }),
    );
    try {
      const denied = await client.callTool({ name: "shell", arguments: { command: "rm keep.txt" } });
      expect(denied.isError).toBe(true);
      expect(denied.structuredContent).toMatchObject({
        code: "EDENIED",
        message: "shell: rm is not allowed here (shell)",
      });
      const fine = await client.callTool({ name: "shell", arguments: { command: "echo fine" } });
      expect(fine.isError).toBe(false);
    } finally {
      await client.close();
    }
    expect(readFileSync(path.join(root, "keep.txt"), "utf8")).toBe("keep\n");
  });
});

describe("the same hooks over serve --http", () => {
  it("POST /calls: the hook's denial is the call's result; allowed calls run", async () => {
    const root = project();
    const config = configWith({ before: [{ tools: ["shell"], ...node(denyRm) }] });
    const server = await startHttp(root, ["--config", config, "--allow", "shell"]);
    try {
      const api = async (route: string, body?: unknown) => {
        const response = await fetch(`${server.url}${route}`, {
          method: body === undefined ? "GET" : "POST",
          headers: { authorization: `Bearer ${server.token}`, "content-type": "application/json" },
          ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
        });
        return (await response.json()) as Record<string, unknown>;
      };
      const sessions = (await api("/api/sessions")) as unknown as Array<{ id: string }>;
      const sid = sessions[0]?.id ?? "";
      const denied = await api(`/api/sessions/${sid}/calls`, {
        tool: "shell",
        input: { command: "rm keep.txt" },
      });
      expect(denied.result).toMatchObject({
        code: "EDENIED",
        message: "shell: rm is not allowed here (shell)",
      });
      const fine = await api(`/api/sessions/${sid}/calls`, {
        tool: "shell",
        input: { command: "echo fine" },
      });
      expect(fine.result).toMatchObject({ kind: "shell_result", stdout: "fine\n" });
    } finally {
      await server.stop();
    }
    expect(readFileSync(path.join(root, "keep.txt"), "utf8")).toBe("keep\n");
  });
});

describe("SDK hooks (createToolbelt)", () => {
  it("the hooks option and session.hooks run around real tool calls", async () => {
    const root = project();
    const session = await createToolbelt({
      root,
      userConfig: false,
      allow: ["shell"],
      hooks: {
        beforeToolCall: [
          (call) =>
            call.tool === "shell" && /\brm\b/.test(String((call.input as { command?: string }).command))
              ? { decision: "deny", message: "rm is not allowed here; use git rm" }
              : undefined,
        ],
      },
    });
    try {
      session.hooks.afterToolCall.push(function audit(call) {
        return { note: `${call.tool} gave ${call.payload.kind}` };
      });
      const denied = await session.callWithText("shell", { command: "rm keep.txt" });
      expect(denied.payload).toMatchObject({
        code: "EDENIED",
        message: "shell: rm is not allowed here; use git rm",
      });
      expect(readFileSync(path.join(root, "keep.txt"), "utf8")).toBe("keep\n");
      const fine = await session.callWithText("shell", { command: "echo fine" });
      expect(fine.payload).toMatchObject({ kind: "shell_result", stdout: "fine\n" });
      expect(fine.text).toContain("[hook] audit: shell gave shell_result");
    } finally {
      await session.close();
    }
  });
});

describe("project hooks and trust", () => {
  function projectWithMarkerHook(): { root: string; marker: string } {
    const root = project();
    const marker = path.join(root, "hook-ran");
    mkdirSync(path.join(root, ".toolbelt/hooks"), { recursive: true });
    writeFileSync(
      path.join(root, ".toolbelt/hooks/mark.mjs"),
      `import { writeFileSync } from "node:fs";\nwriteFileSync(${JSON.stringify(marker)}, "ran");\n`,
    );
    mkdirSync(path.join(root, "configs"));
    writeFileSync(
      path.join(root, "configs/app.json"),
      JSON.stringify({
        hooks: { before: [{ tools: ["*"], command: process.execPath, args: [".toolbelt/hooks/mark.mjs"] }] },
      }),
    );
    return { root, marker };
  }

  it("an untrusted project's hooks do not run, and the CLI says they were ignored", async () => {
    const { root, marker } = projectWithMarkerHook();
    const out = await run([
      "run",
      "read_file",
      "--root",
      root,
      "--input",
      JSON.stringify({ path: "keep.txt" }),
    ]);
    expect(out.code).toBe(0);
    expect(out.stderr).toContain("hooks.before[0] (configs/app.json): runs");
    expect(() => readFileSync(marker)).toThrow();
  });

  it("under --trust they run", async () => {
    const { root, marker } = projectWithMarkerHook();
    const out = await run([
      "run",
      "read_file",
      "--root",
      root,
      "--trust",
      "--input",
      JSON.stringify({ path: "keep.txt" }),
    ]);
    expect(out.code).toBe(0);
    expect(readFileSync(marker, "utf8")).toBe("ran");
  });
});
