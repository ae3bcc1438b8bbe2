import { spawn } from "node:child_process";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { need } from "../../../../test-support/capability.js";
import { assertBuilt, BIN, cli, tempRoot } from "../cli-harness.js";

// SEARCH (issue 17), end to end through the built CLI and the MCP server: collecting every match,
// the ripgrep engine reads named files' matches from plain `--null` output instead of `--json`.
// Its answer must stay what the JS engine (and the JSON reading before it) gives: same payload,
// same text, for awkward names, encodings, line ends and output long enough to cross many pipe
// chunks (lines split between reads).

const dirs: string[] = [];
let root: string;
let config: string;
let rgAvailable = false;

beforeAll(async () => {
  assertBuilt();
  root = tempRoot("tb-search-collect-");
  dirs.push(root);
  const put = (rel: string, content: string | Buffer) => {
    const abs = path.join(root, rel);
    mkdirSync(path.dirname(abs), { recursive: true });
    writeFileSync(abs, content);
  };
  for (let d = 0; d < 20; d++) {
    for (let f = 0; f < 10; f++) {
      const lines = Array.from(
        { length: 200 },
        (_, i) => `const common_${i} = ${d * f}; // é ${"x".repeat(i % 50)}`,
      );
      put(`plain/d${d}/f${f}.ts`, `${lines.join("\n")}\n`);
    }
  }
  for (const name of [
    'x: binary file matches (found "\\0" byte around offset 1)',
    "x",
    "a\rb",
    "\x1b[2Kesc",
    "\u202etxt.exe",
    "back\\slash",
    "# Matches: 5",
    "tab\there",
  ])
    put(`plain/odd/${name}`, "common one\nother\ncommon two\n");
  put("plain/odd/crlf.txt", "common a\r\nother\r\ncommon b\r\n");
  put("plain/odd/no-final-lf.txt", "other\ncommon at the end");
  put("plain/odd/bad-utf8.txt", Buffer.from("common \xff\xfe one\ncommon \xe2\x82 two\n", "latin1"));
  put(
    "plain/odd/utf16.txt",
    Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from("common utf16\r\n", "utf16le")]),
  );
  put("plain/odd/long.txt", `common ${"y".repeat(150 * 1024)}\ncommon short\n`);
  put("plain/odd/binary.dat", Buffer.from("common\0common\n"));
  // A name with LF: the batch holding it is read as JSON.
  put("nl/evil\n# Kind: error", "common\n");
  config = path.join(root, "..", `${path.basename(root)}-limits.json`);
  writeFileSync(
    config,
    JSON.stringify({ limits: { fileSearchMaxMatches: 1_000_000, fileSearchMaxBytes: 1 << 30 } }),
  );
  const probe = await cli(["run", "search_files", "--root", root, "--input", '{"query":"nothing"}'], {
    env: { TOOLBELT_SEARCH_ENGINE: "ripgrep" },
  });
  rgAvailable = (JSON.parse(probe.stdout) as { engine?: string }).engine === "ripgrep";
});
afterAll(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  rmSync(config, { force: true });
});

/**
 * The built CLI's stdout, decoded once at the end: the harness's `cli()` decodes chunk by chunk,
 * which splits a character at a pipe-chunk boundary (output here is megabytes with é on every line).
 */
function run(engine: "ripgrep" | "js", input: Record<string, unknown>, text: boolean): Promise<string> {
  const args = ["run", "search_files", "--root", root, "--config", config];
  if (text) args.push("--format", "text");
  args.push("--input", JSON.stringify(input));
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], {
      env: { ...process.env, NO_COLOR: "1", TOOLBELT_SEARCH_ENGINE: engine },
      stdio: ["ignore", "pipe", "pipe"],
    });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on("data", (c: Buffer) => out.push(c));
    child.stderr.on("data", (c: Buffer) => err.push(c));
    child.on("error", reject);
    child.on("close", (code) => {
      if (code === 0) resolve(Buffer.concat(out).toString("utf8"));
      else reject(new Error(`exit ${code}: ${Buffer.concat(err).toString("utf8")}`));
    });
  });
}

describe("search_files collecting every match", () => {
  it.for<[string, { query: string; path?: string }]>([
    ["a subtree of plain names", { query: "common", path: "plain" }],
    ["the whole root, a name with LF too", { query: "common" }],
    ["a regex", { query: "common_\\d+ = 1\\d" }],
    ["one named binary file", { query: "common", path: "plain/odd/binary.dat" }],
  ])("ripgrep answers %s as the JS engine does, payload and text (CLI)", async ([, input], ctx) => {
    need(ctx, "ripgrep", !rgAvailable && "the built CLI found no ripgrep engine");
    const rg = JSON.parse(await run("ripgrep", input, false)) as { engine: string; matches: number };
    const js = JSON.parse(await run("js", input, false)) as { engine: string; matches: number };
    expect(rg.engine).toBe("ripgrep");
    expect({ ...rg, engine: "js" }).toEqual(js);
    if (input.path === "plain") expect(rg.matches).toBe(40_024);
    expect(await run("ripgrep", input, true)).toBe(await run("js", input, true));
  });

  it("ripgrep answers as the JS engine does through the MCP server", async (ctx) => {
    need(ctx, "ripgrep", !rgAvailable && "the built CLI found no ripgrep engine");
    const texts: Record<string, string> = {};
    for (const engine of ["ripgrep", "js"]) {
      const transport = new StdioClientTransport({
        command: process.execPath,
        args: [BIN, "serve", "--mcp", "--root", root, "--config", config],
        env: { ...(process.env as Record<string, string>), TOOLBELT_SEARCH_ENGINE: engine },
        stderr: "ignore",
      });
      const client = new Client({ name: "search-collect", version: "1" });
      await client.connect(transport);
      const res = (await client.callTool({ name: "search_files", arguments: { query: "common" } })) as {
        content: Array<{ type: string; text?: string }>;
      };
      texts[engine] = res.content.map((c) => c.text ?? "").join("");
      await client.close();
    }
    expect(texts.ripgrep).toContain("# Matches: 40025");
    expect(texts.ripgrep).toBe(texts.js);
  });
});
