import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { parseToolText } from "@toolbelt/core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { assertBuilt, BIN, cli, tempRoot } from "./cli-harness.js";

// The mouaif profile, behaviour by behaviour as its specification writes it, through the built CLI.

const PNG = Buffer.from(
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==",
  "base64",
);

let root: string;
let allowlistConfig: string;

function run(tool: string, input: unknown, extra: string[] = []) {
  return cli([
    "run",
    tool,
    "--root",
    root,
    "--profile",
    "mouaif",
    "--input",
    JSON.stringify(input),
    ...extra,
  ]);
}

function json(stdout: string): Record<string, unknown> {
  return JSON.parse(stdout) as Record<string, unknown>;
}

beforeAll(() => {
  assertBuilt();
  root = tempRoot("tb-mouaif-");
  mkdirSync(path.join(root, "src/deep"), { recursive: true });
  mkdirSync(path.join(root, "docs"), { recursive: true });
  writeFileSync(path.join(root, "src/a.ts"), "export const foo = 1;\nfoo;\n");
  writeFileSync(path.join(root, "src/deep/b.ts"), "// foo here\n");
  writeFileSync(path.join(root, "src/notes.md"), "foo in markdown\n");
  writeFileSync(path.join(root, "src/blob.bin"), Buffer.from([0x66, 0x6f, 0x6f, 0x00, 0x01, 0x02]));
  writeFileSync(path.join(root, "src/logo.png"), PNG);
  writeFileSync(path.join(root, "docs/guide.md"), "foo guide\n");
  writeFileSync(path.join(root, "top.txt"), "foo top\n");
  allowlistConfig = path.join(root, "..", `${path.basename(root)}-allow.json`);
  writeFileSync(allowlistConfig, JSON.stringify({ tools: { file: { allowlist: ["^src/.*\\.ts$"] } } }));
});

afterAll(() => {
  rmSync(root, { recursive: true, force: true });
  rmSync(allowlistConfig, { force: true });
});

describe("mouaif: tools.file governs the five file tools, edit_file included", () => {
  it("an allowlist under tools.file refuses edit_file and write_file outside it", async () => {
    const edit = await run("edit_file", { path: "top.txt", oldText: "foo", newText: "bar" }, [
      "--config",
      allowlistConfig,
    ]);
    expect(edit.code).toBe(1);
    expect(json(edit.stdout)).toMatchObject({ kind: "error", code: "EDENIED" });
    expect(json(edit.stdout).message).toContain("tools.file.allowlist");
    expect(readFileSync(path.join(root, "top.txt"), "utf8")).toBe("foo top\n");

    const write = await run("write_file", { path: "docs/new.md", content: "x" }, [
      "--config",
      allowlistConfig,
    ]);
    expect(json(write.stdout)).toMatchObject({ kind: "error", code: "EDENIED" });
    const read = await run("read_file", { path: "top.txt" }, ["--config", allowlistConfig]);
    expect(json(read.stdout)).toMatchObject({ kind: "error", code: "EDENIED" });
  });

  it("tools.file.mode deny and enabled false reach edit_file", async () => {
    const cfg = path.join(root, "..", `${path.basename(root)}-deny.json`);
    writeFileSync(cfg, JSON.stringify({ tools: { file: { mode: "deny" } } }));
    try {
      const edit = await run("edit_file", { path: "src/a.ts", oldText: "foo;", newText: "bar;" }, [
        "--config",
        cfg,
      ]);
      expect(json(edit.stdout)).toMatchObject({ kind: "error", code: "EDENIED" });
      expect(json(edit.stdout).message).toContain("tools.file.mode");
      writeFileSync(cfg, JSON.stringify({ tools: { file: { enabled: false } } }));
      const tools = await cli([
        "tools",
        "--profile",
        "mouaif",
        "--format",
        "json",
        "--root",
        root,
        "--config",
        cfg,
      ]);
      const names = (json(tools.stdout).tools as Array<{ name: string }>).map((t) => t.name);
      for (const n of ["read_file", "write_file", "edit_file", "list_files", "search_files"])
        expect(names).not.toContain(n);
      expect(names).toContain("shell");
    } finally {
      rmSync(cfg, { force: true });
    }
  });

  it("an untrusted project's tools.file.mode allow is ignored, loudly", async () => {
    const project = tempRoot("tb-mouaif-untrusted-");
    const userDir = tempRoot("tb-mouaif-user-");
    try {
      mkdirSync(path.join(project, "configs"));
      writeFileSync(path.join(project, "a.txt"), "x\n");
      // The user asks before the file tools run; the project tries to lift that with tools.file.
      writeFileSync(path.join(userDir, "config.json"), JSON.stringify({ tools: { file: { mode: "ask" } } }));
      writeFileSync(
        path.join(project, "configs/app.json"),
        JSON.stringify({ tools: { file: { mode: "allow" } } }),
      );
      const env = { TOOLBELT_CONFIG_DIR: userDir, XDG_CONFIG_HOME: userDir, TOOLBELT_TRUST: "" };
      const args = [
        "run",
        "read_file",
        "--root",
        project,
        "--profile",
        "mouaif",
        "--input",
        '{"path":"a.txt"}',
      ];
      const r = await cli(args, { env });
      // Nobody can approve in a headless run: the user's ask stands, so the read is refused.
      expect(json(r.stdout)).toMatchObject({ kind: "error", code: "EDENIED" });
      expect(r.stderr).toContain("tools.file.mode");
      // Trusted, the same project's allow applies.
      const trusted = await cli([...args, "--trust"], { env });
      expect(json(trusted.stdout)).toMatchObject({ kind: "file_content" });
    } finally {
      rmSync(project, { recursive: true, force: true });
      rmSync(userDir, { recursive: true, force: true });
    }
  });

  it("an unknown key under tools is a config error listing the known keys", async () => {
    const cfg = path.join(root, "..", `${path.basename(root)}-typo.json`);
    writeFileSync(cfg, JSON.stringify({ tools: { flies: { mode: "deny" } } }));
    try {
      const r = await run("list_files", {}, ["--config", cfg]);
      expect(r.code).toBe(2);
      const said = r.stdout + r.stderr;
      expect(said).toContain("EINVAL_CONFIG");
      expect(said).toContain("unknown key tools.flies");
      // Families the run did not load are still known keys (a shared config names them all).
      expect(said).toMatch(/known here: .*\bfile, .*\bshell, /);
    } finally {
      rmSync(cfg, { force: true });
    }
  });
});

describe("mouaif: an allowlist filters listings instead of refusing them", () => {
  it.each([".", "src"])("list_files of %s lists only the allowed files", async (dir) => {
    const r = await run("list_files", { pattern: "**", path: dir }, ["--config", allowlistConfig]);
    expect(r.code).toBe(0);
    const out = json(r.stdout);
    expect((out.entries as Array<{ path: string }>).map((e) => e.path)).toEqual([
      "src/deep/b.ts",
      "src/a.ts",
    ]);
  });

  it("list_files of a directory no allowed file can lie under is EDENIED", async () => {
    const r = await run("list_files", { path: "docs" }, ["--config", allowlistConfig]);
    expect(json(r.stdout)).toMatchObject({ kind: "error", code: "EDENIED" });
  });

  it.each(["ripgrep", "js"])("search_files of . keeps only allowed files (%s engine)", async (engine) => {
    const r = await cli(
      [
        "run",
        "search_files",
        "--root",
        root,
        "--profile",
        "mouaif",
        "--format",
        "text",
        "--input",
        JSON.stringify({ query: "foo" }),
        "--config",
        allowlistConfig,
      ],
      { env: { TOOLBELT_SEARCH_ENGINE: engine } },
    );
    expect(r.code).toBe(0);
    const parsed = parseToolText(r.stdout);
    expect(parsed.entries?.map((e) => e.path)).toEqual(["src/deep/b.ts", "src/a.ts"]);
    expect(r.stdout).not.toContain("top.txt");
    expect(r.stdout).not.toContain("guide.md");
    expect(parsed.skipped).toBeGreaterThanOrEqual(3);
  });
});

describe("mouaif: one edit tool, its own parameter names in every message", () => {
  it.each(["claude-sonnet-4", "gpt-5", "llama-3"])("binds edit_file with model %s", async (model) => {
    const r = await cli([
      "tools",
      "--profile",
      "mouaif",
      "--model",
      model,
      "--format",
      "json",
      "--root",
      root,
    ]);
    const names = (json(r.stdout).tools as Array<{ name: string }>).map((t) => t.name);
    expect(names).toContain("edit_file");
    expect(names).not.toContain("search_replace_block");
    expect(names).not.toContain("structured_patch");
  });

  it("edit_file errors say oldText/newText", async () => {
    const empty = await run("edit_file", { path: "src/a.ts", oldText: "", newText: "x" });
    expect(json(empty.stdout).message).toMatch(/^oldText is empty/);
    const same = await run("edit_file", { path: "src/a.ts", oldText: "foo;", newText: "foo;" });
    expect(json(same.stdout).message).toContain("oldText and newText are the same");
    const missing = await run("edit_file", { path: "src/a.ts", oldText: "no such line", newText: "x" });
    expect(json(missing.stdout)).toMatchObject({ code: "ENO_MATCH" });
    for (const r of [empty, same, missing]) expect(r.stdout).not.toMatch(/old_text|new_text/);
  });

  it("read_file errors and next notes say startLine/endLine, never offset/limit", async () => {
    const past = await run("read_file", { path: "src/a.ts", startLine: 40 }, ["--format", "text"]);
    expect(past.stdout).toContain("startLine 40 is past the end");
    const window = await run("read_file", { path: "src/a.ts", endLine: 1 }, ["--format", "text"]);
    expect(window.stdout).toContain("# Truncated: yes (next startLine 2)");
    expect(window.stdout).toContain("use startLine/endLine to read more");
    for (const r of [past, window]) expect(r.stdout).not.toMatch(/offset|limit/);
  });
});

describe("mouaif: edit_file tolerates line-wrapping differences", () => {
  const CALL = "function f() {\n  const result = compute(alpha, beta, gamma);\n  return result;\n}\n";
  const WRAPPED = "const result = compute(\n  alpha,\n  beta,\n  gamma\n);";
  const edit = (file: string, oldText: string, newText: string, profile = "mouaif") =>
    cli([
      "run",
      "edit_file",
      "--root",
      root,
      "--profile",
      profile,
      "--input",
      JSON.stringify(
        profile === "mouaif"
          ? { path: file, oldText, newText }
          : { path: file, old_text: oldText, new_text: newText },
      ),
    ]);

  it("a call wrapped one argument per line matches the one-line call, and says so", async () => {
    for (const profile of ["mouaif", "default"]) {
      writeFileSync(path.join(root, "wrap.ts"), CALL);
      const r = await edit("wrap.ts", WRAPPED, "const result = compute(alpha, beta, gamma, delta);", profile);
      expect(json(r.stdout), profile).toMatchObject({ kind: "edit_result", strategy: "line_wrapping" });
      expect(readFileSync(path.join(root, "wrap.ts"), "utf8")).toBe(
        "function f() {\n  const result = compute(alpha, beta, gamma, delta);\n  return result;\n}\n",
      );
    }
    // And the other way: the file wrapped, the search text on one line.
    writeFileSync(path.join(root, "wrap.ts"), `function f() {\n  ${WRAPPED.replace(/\n/g, "\n  ")}\n}\n`);
    const back = await edit("wrap.ts", "const result = compute(alpha, beta, gamma);", "const result = 0;");
    expect(json(back.stdout)).toMatchObject({ kind: "edit_result", strategy: "line_wrapping" });
    expect(readFileSync(path.join(root, "wrap.ts"), "utf8")).toBe("function f() {\n  const result = 0;\n}\n");
  });

  it("two places that match once wrapping is ignored are EMULTI_MATCH; the file is unchanged", async () => {
    const twice = `${CALL}${CALL.replace("function f", "function g")}`;
    writeFileSync(path.join(root, "wrap.ts"), twice);
    const r = await edit("wrap.ts", WRAPPED, "x");
    expect(json(r.stdout)).toMatchObject({ kind: "error", code: "EMULTI_MATCH", strategy: "line_wrapping" });
    expect(readFileSync(path.join(root, "wrap.ts"), "utf8")).toBe(twice);
  });

  it("changed code is ENO_MATCH: a token, a merged token, a newline inside a string, code a comment swallows", async () => {
    const cases: Array<[string, string]> = [
      [CALL, "const result = compute(\n  alpha,\n  beta,\n  delta\n);"],
      [CALL, "const result = compute(\n  alpha,\n  beta,\n  gamma,\n);"],
      // `beta gamma` is not `betagamma`, nor `+ +` `++`.
      ["const s = a + +b;\nconst t = betagamma;\n", "const s = a\n  ++b;"],
      ["const s = a + +b;\nconst t = betagamma;\n", "const t = beta\n  gamma;"],
      // Whitespace inside a string literal counts, line breaks included.
      ['log("hello world");\n', 'log("hello\nworld");'],
      ["const s = `a\n    b`;\n", "const s = `a\nb`;"],
      // A line comment ends at its line: the call below it is code, not part of the comment.
      ["// explain\nrun();\n", "// explain run();"],
    ];
    for (const [file, oldText] of cases) {
      writeFileSync(path.join(root, "wrap.ts"), file);
      const r = await edit("wrap.ts", oldText, "changed();");
      expect(json(r.stdout), oldText).toMatchObject({ kind: "error", code: "ENO_MATCH" });
      expect(readFileSync(path.join(root, "wrap.ts"), "utf8")).toBe(file);
    }
  });
});

describe("mouaif: model-facing text as the spec shows it", () => {
  it("list_files: # Listing / # Count, a blank line, the tree; parseToolText rebuilds it", async () => {
    const r = await run("list_files", { pattern: "src/**/*.ts" }, ["--format", "text"]);
    expect(r.stdout.split("\n").slice(0, 3)).toEqual(["# Listing: src/**/*.ts", "# Count: 2", ""]);
    expect(r.stdout).not.toContain("# Kind:");
    const parsed = parseToolText(r.stdout);
    expect(parsed.kind).toBe("file_list");
    expect(parsed.entries?.map((e) => e.path)).toEqual(["src/deep/b.ts", "src/a.ts"]);
    expect(parsed.truncated).toBe(false);
  });

  it("search_files: # Search / # Matches, a blank line, `line: text` rows; caps are parsed", async () => {
    const cfg = path.join(root, "..", `${path.basename(root)}-cap.json`);
    writeFileSync(cfg, JSON.stringify({ limits: { fileSearchMaxMatches: 2 } }));
    try {
      const r = await run("search_files", { query: "foo", path: "src" }, [
        "--format",
        "text",
        "--config",
        cfg,
      ]);
      const lines = r.stdout.split("\n");
      expect(lines[0]).toBe("# Search: foo");
      expect(lines[1]).toMatch(/^# Matches: 2 \(capped at 2 matches/);
      expect(lines[2]).toBe("");
      const parsed = parseToolText(r.stdout);
      expect(parsed.kind).toBe("search_results");
      expect(parsed.entries?.[0]?.matches?.[0]).toEqual({ line: 1, text: "// foo here" });
      expect(parsed).toMatchObject({ truncated: true, cap: 2 });
    } finally {
      rmSync(cfg, { force: true });
    }
  });

  it("list_files: a bare directory in another case lists it; binaries are left out, images kept", async () => {
    const r = await run("list_files", { pattern: "SRC" });
    const paths = (json(r.stdout).entries as Array<{ path: string }>).map((e) => e.path);
    expect(paths).toEqual(["src/deep/b.ts", "src/a.ts", "src/logo.png", "src/notes.md"]);
    // The default profile keeps listing every file.
    const d = await cli(["run", "list_files", "--root", root, "--input", '{"pattern":"src"}']);
    expect((json(d.stdout).entries as Array<{ path: string }>).map((e) => e.path)).toContain("src/blob.bin");
  });

  it("write_file's result carries relPath, chars and lines", async () => {
    const r = await run("write_file", { path: "out/new.txt", content: "one\ntwo\nthree" });
    expect(json(r.stdout)).toMatchObject({
      kind: "file_written",
      relPath: "out/new.txt",
      chars: 13,
      lines: 3,
    });
    const d = await cli([
      "run",
      "write_file",
      "--root",
      root,
      "--input",
      '{"path":"out/d.txt","content":"x\\n"}',
    ]);
    expect(json(d.stdout)).not.toHaveProperty("relPath");
  });
});

describe("mouaif over MCP: read_file of an image is an MCP image block", () => {
  it("answers an image content block with the file's bytes", async () => {
    const client = new Client({ name: "mouaif-test", version: "1.0.0" });
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [BIN, "serve", "--mcp", "--profile", "mouaif", "--root", root],
      stderr: "pipe",
    });
    await client.connect(transport);
    try {
      const result = await client.callTool({ name: "read_file", arguments: { path: "src/logo.png" } });
      const blocks = result.content as Array<{ type: string; data?: string; mimeType?: string }>;
      const image = blocks.find((b) => b.type === "image");
      expect(image).toMatchObject({ mimeType: "image/png", data: PNG.toString("base64") });
    } finally {
      await client.close();
    }
  });
});
