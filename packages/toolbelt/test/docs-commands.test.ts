import { spawn } from "node:child_process";
import { chmodSync, existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { assertBuilt, BIN, REPO, tempRoot } from "./cli-harness.js";

// Every `toolbelt` command in a ```sh block of the README and the docs runs against the built CLI in
// this repository and must exit 0 with some output: docs that drift from behaviour fail here. What
// cannot run here (servers, the whole test suite, files the reader brings) is listed as skipped,
// with the reason.

interface DocCommand {
  file: string;
  line: string;
  command: string;
}

/** The markdown files whose shell blocks are checked. */
function docFiles(): string[] {
  const out = ["README.md"];
  for (const f of readdirSync(path.join(REPO, "docs"))) if (f.endsWith(".md")) out.push(`docs/${f}`);
  for (const dir of ["packages", "examples"])
    for (const name of readdirSync(path.join(REPO, dir))) {
      const readme = `${dir}/${name}/README.md`;
      if (existsSync(path.join(REPO, readme))) out.push(readme);
    }
  return out;
}

/** Commands that call toolbelt, from ```sh / ```bash blocks, with comments cut. */
function docCommands(): DocCommand[] {
  const out: DocCommand[] = [];
  for (const file of docFiles()) {
    const text = readFileSync(path.join(REPO, file), "utf8");
    for (const block of text.matchAll(/```(?:sh|bash|shell)\n([\s\S]*?)```/g)) {
      for (const raw of (block[1] as string).split("\n")) {
        const line = raw.trim();
        if (
          line.startsWith("#") ||
          !/(^|\|\s*)(npx (-y )?(@toolbelt\/)?toolbelt|toolbelt|node packages\/toolbelt\/)/.test(line)
        )
          continue;
        // A trailing "   # comment" (two spaces or more before it) is prose, not part of the command.
        const command = line
          .replace(/\s{2,}#.*$/, "")
          .replace(/npx (-y )?(@toolbelt\/)?toolbelt\b/g, "toolbelt")
          .replace(/node packages\/toolbelt\/dist\/bin\.js/g, "toolbelt");
        out.push({ file, line, command });
      }
    }
  }
  return out;
}

/** Why a command cannot run here, or undefined when it can. */
function skipReason(c: DocCommand): string | undefined {
  if (/^npm (install|i)\b/.test(c.command)) return "installs a package";
  if (/\btoolbelt serve\b/.test(c.command))
    return "a server that runs until stopped (serve-*.test.ts cover it)";
  if (/npm test/.test(c.command)) return "runs the whole test suite";
  if (/~\/|\/path\/to\//.test(c.command)) return "names the reader's own project";
  if (/\btoolbelt mcp login\b/.test(c.command))
    return "signs in through a browser (packages/mcp/test/oauth-cli.test.ts covers it)";
  const input = /<\s*(\S+)/.exec(c.command)?.[1];
  if (input && !existsSync(path.join(REPO, input))) return `reads ${input}, which the reader brings`;
  return undefined;
}

let shimDir: string;
let userDir: string;

beforeAll(() => {
  assertBuilt();
  // `toolbelt` on PATH is the built CLI of this checkout, as `npx toolbelt` is after an install.
  shimDir = tempRoot("tb-docs-bin-");
  userDir = tempRoot("tb-docs-user-");
  const shim = path.join(shimDir, "toolbelt");
  writeFileSync(shim, `#!/bin/sh\nexec ${JSON.stringify(process.execPath)} ${JSON.stringify(BIN)} "$@"\n`);
  chmodSync(shim, 0o755);
});
afterAll(() => {
  rmSync(shimDir, { recursive: true, force: true });
  rmSync(userDir, { recursive: true, force: true });
});

function sh(command: string): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn("sh", ["-c", command], {
      cwd: REPO,
      env: {
        ...process.env,
        PATH: `${shimDir}${path.delimiter}${process.env.PATH}`,
        TOOLBELT_CONFIG_DIR: userDir,
        TOOLBELT_TRUST: "0",
        NO_COLOR: "1",
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    child.stdout.on("data", (d) => {
      out += d;
    });
    child.stderr.on("data", (d) => {
      out += d;
    });
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, out }));
  });
}

const commands = docCommands();
const runnable = commands.filter((c) => !skipReason(c));
for (const c of commands) {
  const why = skipReason(c);
  if (why) console.log(`docs command skipped (${why}): ${c.file}: ${c.line}`);
}

describe("commands in the README and docs", { timeout: 120_000 }, () => {
  it("finds the commands to check", () => {
    // The README's CI section and the docs hold several; none found means the extraction broke.
    expect(runnable.length).toBeGreaterThanOrEqual(5);
  });

  it.each(runnable.map((c) => [`${c.file}: ${c.command}`, c] as const))("%s", async (_name, c) => {
    const { code, out } = await sh(c.command);
    expect(code, out.slice(0, 2000)).toBe(0);
    expect(out.trim().length).toBeGreaterThan(0);
    // An example that finds nothing shows nothing: the README's exec example once listed 0 files.
    expect(out).not.toMatch(/"count":0[,}]|# Count: 0\b/);
  });
});
