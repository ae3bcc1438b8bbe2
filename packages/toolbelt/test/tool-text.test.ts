import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { parseToolText, type TreeEntry } from "@toolbelt/core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { assertBuilt, cli, tempRoot } from "./cli-harness.js";

// The model-facing text through the built CLI: one header shape in every profile and tool, and the
// listing/search structure a config picks (toolOutput.structure), each read back by parseToolText.

let root: string;
let configs: string;

beforeAll(() => {
  assertBuilt();
  root = tempRoot("tb-text-");
  configs = tempRoot("tb-text-configs-");
  mkdirSync(path.join(root, "src/deep"), { recursive: true });
  writeFileSync(path.join(root, "src/a.ts"), "export const foo = 1;\nfoo;\n");
  writeFileSync(path.join(root, "src/deep/b.ts"), "// foo here\n");
  writeFileSync(path.join(root, "src/deep/odd:3: name.ts"), "foo in an odd name\n");
  writeFileSync(path.join(root, "top.txt"), "foo top\n");
});

afterAll(() => {
  for (const dir of [root, configs]) rmSync(dir, { recursive: true, force: true });
});

function config(name: string, value: unknown): string {
  const file = path.join(configs, name);
  writeFileSync(file, JSON.stringify(value));
  return file;
}

async function both(profile: string, tool: string, input: unknown, extra: string[] = []) {
  const args = [
    "run",
    tool,
    "--root",
    root,
    "--profile",
    profile,
    "--input",
    JSON.stringify(input),
    ...extra,
  ];
  const text = await cli([...args, "--format", "text"]);
  const json = await cli(args);
  return { text: text.stdout, payload: JSON.parse(json.stdout) as Record<string, unknown>, code: text.code };
}

/** The header lines, then exactly one blank line, then a body that starts with a non-blank line. */
function expectOneShape(text: string, what: string): void {
  const lines = text.split("\n");
  let i = 0;
  while (i < lines.length && /^# [A-Za-z][A-Za-z0-9 _-]*: /.test(lines[i] as string)) i++;
  expect(i, `${what}: header lines\n${text}`).toBeGreaterThan(0);
  expect(lines[i], `${what}: a blank line after the headers\n${text}`).toBe("");
  expect((lines[i + 1] ?? "").trim(), `${what}: the body right after it\n${text}`).not.toBe("");
}

/** The text as transcripts written before the blank line read: headers, then the body at once. */
function withoutBlankLine(text: string): string {
  const at = text.indexOf("\n\n");
  return `${text.slice(0, at)}\n${text.slice(at + 2)}`;
}

describe("one header shape: `# Key: value` lines, one blank line, the body", () => {
  const calls: Array<[string, string, unknown, string[]?]> = [
    ["default", "read_file", { path: "src/a.ts" }],
    ["default", "list_files", { pattern: "src/**" }],
    ["default", "search_files", { query: "foo" }],
    ["default", "read_file", { path: "missing.ts" }],
    ["default", "shell", { command: "echo hi" }, ["--allow", "shell"]],
    ["mouaif", "read_file", { path: "src/a.ts", startLine: 1, endLine: 1 }],
    ["mouaif", "list_files", { pattern: "src/**" }],
    ["mouaif", "search_files", { query: "foo" }],
    ["mewbo", "read_file", { path: "src/a.ts", offset: 0, limit: 1 }],
    ["mewbo", "aider_list_dir_tool", { path: "src" }],
    ["mewbo", "aider_shell_tool", { command: "echo hi" }, ["--allow", "shell"]],
  ];

  it.each(calls)("%s %s", async (profile, tool, input, extra = []) => {
    const { text } = await both(profile, tool, input, extra);
    expectOneShape(text, `${profile} ${tool}`);
  });

  it("parseToolText reads the new shape and the old one (no blank line) alike", async () => {
    for (const [profile, tool, input] of [
      ["default", "list_files", { pattern: "src/**" }],
      ["mouaif", "list_files", { pattern: "src/**" }],
      ["default", "search_files", { query: "foo" }],
      ["mouaif", "search_files", { query: "foo" }],
    ] as const) {
      const { text, payload } = await both(profile, tool, input);
      const now = parseToolText(text);
      const before = parseToolText(withoutBlankLine(text));
      expect(now.entries, `${profile} ${tool}`).toEqual(payload.entries);
      expect(before.entries, `${profile} ${tool} (old shape)`).toEqual(payload.entries);
      expect(before.body).toBe(now.body);
      expect(before.headers).toEqual(now.headers);
    }
    const { text } = await both("mouaif", "read_file", { path: "src/a.ts" });
    const now = parseToolText(text);
    expect(now.body.trimEnd()).toBe("     1\texport const foo = 1;\n     2\tfoo;");
    expect(parseToolText(withoutBlankLine(text))).toEqual(now);
  });
});

describe("toolOutput.structure: tree (the default) or flat", () => {
  it("is a known setting: tree is the default, flat is accepted, anything else is a config error", async () => {
    const listing = { pattern: "src/**" };
    const plain = await both("default", "list_files", listing);
    const tree = await both("default", "list_files", listing, [
      "--config",
      config("tree.json", { toolOutput: { structure: "tree" } }),
    ]);
    expect(tree.code).toBe(0);
    expect(tree.text).toBe(plain.text);
    expect(plain.text).toMatch(/\nsrc\/\n {2}deep\//);

    const bad = await cli([
      "run",
      "list_files",
      "--root",
      root,
      "--input",
      JSON.stringify(listing),
      "--config",
      config("bad.json", { toolOutput: { structure: "nested" } }),
    ]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/toolOutput\.structure/);
    expect(bad.stderr).toMatch(/"tree"|tree/);
  });

  it.each(["default", "mouaif"])(
    "%s: flat lists one full path per row and search as path:line: text rows; the parser reads both",
    async (profile) => {
      const flat = ["--config", config("flat.json", { toolOutput: { structure: "flat" } })];
      const list = await both(profile, "list_files", { pattern: "src/**" }, flat);
      expectOneShape(list.text, "flat list_files");
      const rows = list.text
        .slice(list.text.indexOf("\n\n") + 2)
        .trimEnd()
        .split("\n");
      const paths = (list.payload.entries as TreeEntry[]).map((e) => e.path);
      expect(rows).toHaveLength(paths.length);
      for (const row of rows) expect(row).toMatch(/^src\//);
      expect(rows).toContain("src/deep/b.ts");
      expect(parseToolText(list.text).entries).toEqual(list.payload.entries);
      expect(parseToolText(withoutBlankLine(list.text)).entries).toEqual(list.payload.entries);

      const search = await both(profile, "search_files", { query: "foo" }, flat);
      expectOneShape(search.text, "flat search_files");
      const body = search.text
        .slice(search.text.indexOf("\n\n") + 2)
        .trimEnd()
        .split("\n");
      expect(body).toContain("src/a.ts:1: export const foo = 1;");
      expect(body).toContain("src/deep/b.ts:1: // foo here");
      expect(body).toContain("top.txt:1: foo top");
      // A colon in a name is escaped, so the row still splits at the first colon.
      expect(body).toContain("src/deep/odd\\x3A3\\x3A name.ts:1: foo in an odd name");
      expect(parseToolText(search.text).entries).toEqual(search.payload.entries);
      expect(parseToolText(withoutBlankLine(search.text)).entries).toEqual(search.payload.entries);
    },
  );

  it("applies from an untrusted project's configs/app.json: it changes how text looks, nothing else", async () => {
    const project = tempRoot("tb-text-project-");
    try {
      mkdirSync(path.join(project, "configs"));
      mkdirSync(path.join(project, "lib"));
      writeFileSync(path.join(project, "lib/x.ts"), "x\n");
      writeFileSync(
        path.join(project, "configs/app.json"),
        JSON.stringify({ toolOutput: { structure: "flat" } }),
      );
      const out = await cli([
        "run",
        "list_files",
        "--root",
        project,
        "--input",
        '{"pattern":"**"}',
        "--format",
        "text",
      ]);
      expect(out.code, out.stderr).toBe(0);
      expect(out.stdout.split("\n")).toContain("lib/x.ts");
      expect(out.stderr).not.toMatch(/toolOutput/);
    } finally {
      rmSync(project, { recursive: true, force: true });
    }
  });
});
