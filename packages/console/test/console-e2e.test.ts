// biome-ignore-all lint/performance/useDomNodeTextContent: these are Playwright locators (what the user sees), not DOM nodes
// The console served by the built `toolbelt serve --http`, in headless chromium: a session driven
// over the HTTP API draws cards, and questions and approvals answered in the page reach the session.
//
// TOOLBELT_CONSOLE_SCREENSHOTS=<dir> also saves screenshots of the session there: that is how
// `npm run docs:screenshots` refreshes docs/screenshots.
import { type ChildProcess, spawn } from "node:child_process";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { deflateSync } from "node:zlib";
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { lacks } from "../../../test-support/capability.js";
import { assertBuilt } from "../../toolbelt/test/cli-harness.js";
import { browserSkipReason, launchBrowser, type TestBrowser } from "../src/testing/browser.js";

const repo = fileURLToPath(new URL("../../../", import.meta.url));
const bin = join(repo, "packages/toolbelt/dist/bin.js");

// No browser is a capability skip; a missing or stale build fails (see assertBuilt).
const noChromium = lacks("chromium", browserSkipReason());

const shots = process.env.TOOLBELT_CONSOLE_SCREENSHOTS;
const TOKEN = "console-e2e-token";

/** A 48x32 PNG (blue with white bars), so read_file has an image to show. */
function tinyPng(): Buffer {
  const crcTable = Array.from({ length: 256 }, (_, n) => {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    return c >>> 0;
  });
  const crc = (data: Buffer): number => {
    let c = 0xffffffff;
    for (const byte of data) c = (crcTable[(c ^ byte) & 0xff] as number) ^ (c >>> 8);
    return (c ^ 0xffffffff) >>> 0;
  };
  const chunk = (type: string, data: Buffer): Buffer => {
    const head = Buffer.alloc(4);
    head.writeUInt32BE(data.length);
    const body = Buffer.concat([Buffer.from(type, "ascii"), data]);
    const tail = Buffer.alloc(4);
    tail.writeUInt32BE(crc(body));
    return Buffer.concat([head, body, tail]);
  };
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(48, 0);
  ihdr.writeUInt32BE(32, 4);
  ihdr.set([8, 2, 0, 0, 0], 8); // 8-bit RGB
  const rows: number[] = [];
  for (let y = 0; y < 32; y++) {
    rows.push(0);
    for (let x = 0; x < 48; x++) rows.push(...(y % 8 < 2 ? [255, 255, 255] : [47, 111, 235]));
  }
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk("IHDR", ihdr),
    chunk("IDAT", deflateSync(Buffer.from(rows))),
    chunk("IEND", Buffer.alloc(0)),
  ]);
}

async function fixture(root: string): Promise<void> {
  await mkdir(join(root, "configs"), { recursive: true });
  await writeFile(
    join(root, "configs/app.json"),
    JSON.stringify({ limits: { fileListMaxEntries: 1000, fileSearchMaxMatches: 200 } }),
  );
  const writes: Array<Promise<void>> = [];
  for (let i = 0; i < 1100; i++) {
    const dir = join(root, "src", ["core", "cli", "util", "files"][i % 4] as string);
    const name = `mod-${String(i).padStart(4, "0")}.ts`;
    writes.push(
      mkdir(dir, { recursive: true }).then(() =>
        writeFile(join(dir, name), `export const n${i} = ${i};\n// TODO: check ${i}\n`),
      ),
    );
  }
  await Promise.all(writes);
  await writeFile(
    join(root, "src/config.ts"),
    "export const limits = {\n  listing: 500,\n  search: 100,\n};\n",
  );
  await writeFile(join(root, "logo.png"), tinyPng());
}

type Server = { url: string; process: ChildProcess };

async function startServer(root: string): Promise<Server> {
  const child = spawn(
    process.execPath,
    [bin, "serve", "--http", "--trust", "--root", root, "--port", "0", "--token", TOKEN],
    {
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  const url = await new Promise<string>((resolve, reject) => {
    let out = "";
    const timer = setTimeout(() => reject(new Error(`serve --http did not start: ${out}`)), 30_000);
    child.stdout?.on("data", (chunk: Buffer) => {
      out += chunk.toString();
      const m = /listening on (http:\/\/\S+)/.exec(out);
      if (m?.[1]) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    });
    child.stderr?.on("data", (chunk: Buffer) => {
      out += chunk.toString();
    });
    child.on("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`serve --http exited ${code}: ${out}`));
    });
  });
  return { url, process: child };
}

describe.skipIf(noChromium)("console against toolbelt serve --http", () => {
  let root: string;
  let server: Server;
  let browser: TestBrowser;
  let page: Page;
  let session: string;

  const api = async (method: string, path: string, body?: unknown): Promise<Record<string, unknown>> => {
    const response = await fetch(`${server.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    return (await response.json()) as Record<string, unknown>;
  };
  const call = (tool: string, input: unknown, callId?: string) =>
    api("POST", `/api/sessions/${encodeURIComponent(session)}/calls`, {
      tool,
      input,
      ...(callId ? { call_id: callId } : {}),
    }) as Promise<{ result: Record<string, unknown>; text: string }>;
  const card = (callId: string) => page.locator(`.tool-card[data-call-id="${callId}"]`);

  beforeAll(async () => {
    assertBuilt();
    root = await mkdtemp(join(tmpdir(), "toolbelt-console-e2e-"));
    await fixture(root);
    server = await startServer(root);
    const sessions = (await (
      await fetch(`${server.url}/api/sessions`, { headers: { authorization: `Bearer ${TOKEN}` } })
    ).json()) as Array<{ id: string }>;
    session = sessions[0]?.id ?? "";
    browser = await launchBrowser();
    page = await browser.context.newPage();
    await page.setViewportSize({ width: 1280, height: 860 });
    // The address `serve --http` prints: the token in the query.
    await page.goto(`${server.url}/?token=${encodeURIComponent(TOKEN)}`);
    await page.locator(".status-open").waitFor();
  }, 90_000);

  afterAll(async () => {
    // Screenshots are a docs step (npm run docs:screenshots), not a test: nothing reports them skipped.
    if (shots && page) {
      await card("shell-ok").locator(".card-summary").click();
      await page.evaluate(() => window.scrollTo(0, 0));
      await page.screenshot({ path: join(shots, "console-session.png"), fullPage: true });
      await page.locator(".panel").scrollIntoViewIfNeeded();
      await page.locator(".panel").screenshot({ path: join(shots, "console-panel.png") });
    }
    await browser?.close();
    server?.process.kill("SIGTERM");
    if (root) await rm(root, { recursive: true, force: true });
  });

  it("draws the cards of a scripted session with their caps", async () => {
    await call("update_todos", {
      todos: [
        { content: "Survey the source tree", status: "completed" },
        { content: "Raise the listing limit", status: "in_progress" },
        { content: "Run the checks", status: "pending" },
      ],
    });
    await call("list_files", { pattern: "src" }, "list");
    await call("search_files", { query: "TODO" }, "search");
    await call("read_file", { path: "src/config.ts" }, "read");
    await call("read_file", { path: "logo.png" }, "image");
    await call(
      "edit_file",
      { path: "src/config.ts", old_text: "  listing: 500,", new_text: "  listing: 1000," },
      "edit",
    );
    await call(
      "write_file",
      { path: "NOTES.md", content: "# Notes\n\nThe listing limit is now 1000.\n" },
      "write",
    );
    await call("read_file", { path: "missing.ts" }, "missing");

    await expect.poll(() => page.locator(".tool-card").count()).toBe(8);
    expect(await card("list").locator(".outcome").innerText()).toBe("1000 files (capped at 1000)");
    expect(await card("search").locator(".outcome").innerText()).toContain("200 matches (capped at 200)");
    expect(await card("missing").locator(".outcome").innerText()).toMatch(/^ENOENT: /);
    expect(await page.locator('.todo-dock [aria-current="step"]').innerText()).toContain(
      "Raise the listing limit",
    );

    await card("search").locator(".card-summary").click();
    const matches = card("search").locator(".match");
    await matches.first().waitFor();
    expect(await matches.count()).toBe(200);
    expect(await matches.first().innerText()).toMatch(/^2\s+\/\/ TODO: check \d+$/);
    expect(await card("search").locator(".dir-name").first().innerText()).toMatch(/^src\/\w+\/$/);

    await card("search").locator(".card-summary").click();
    expect(await card("search").locator(".card-body").count()).toBe(0);

    await card("edit").locator(".card-summary").click();
    expect((await card("edit").locator(".d-add").innerText()).trim()).toBe("+  listing: 1000,");
    await card("write").locator(".card-summary").click();
    expect(await card("write").locator(".written").innerText()).toContain("The listing limit is now 1000.");
    await card("image").locator(".card-summary").click();
    await card("image").locator("img.image-preview").waitFor();
    expect(
      await card("image")
        .locator("img.image-preview")
        .evaluate((img: HTMLImageElement) => img.naturalWidth),
    ).toBe(48);
  });

  it("advertises generative_ui and ask_user while it is open: its session binds present_ui and ask_user_question", async () => {
    const offered = async (id: string): Promise<string[]> => {
      const body = (await api("GET", `/api/sessions/${encodeURIComponent(id)}/tools`)) as {
        tools: Array<{ name: string }>;
        deferred: string[];
      };
      return [...body.tools.map((t) => t.name), ...body.deferred];
    };
    const uiTools = ["present_ui", "ask_user_question"];
    // The page of the first session is open: its tools are bound.
    expect(await offered(session)).toEqual(expect.arrayContaining(uiTools));
    // A session nobody watches binds neither, until a console opens it; closing the page unbinds them.
    const other = String((await api("POST", "/api/sessions", {})).id);
    const has = async (id: string) => (await offered(id)).filter((t) => uiTools.includes(t)).sort();
    expect(await has(other)).toEqual([]);
    const second = await browser.context.newPage();
    await second.goto(
      `${server.url}/#token=${encodeURIComponent(TOKEN)}&session=${encodeURIComponent(other)}`,
    );
    await second.locator(".status-open").waitFor();
    await expect.poll(() => has(other)).toEqual([...uiTools].sort());
    await second.close();
    await expect.poll(() => has(other)).toEqual([]);
    await api("DELETE", `/api/sessions/${encodeURIComponent(other)}`);
  });

  it("draws a present_ui panel", async () => {
    const result = await call("present_ui", {
      tree: {
        component: "Card",
        id: "summary",
        title: "Limits review",
        children: [
          { component: "Paragraph", text: "The listing limit was raised; the search limit stays." },
          {
            component: "Table",
            columns: ["limit", "before", "after"],
            rows: [
              ["listing", 500, 1000],
              ["search", 100, 100],
            ],
          },
          { component: "Badge", text: "1 file edited", tone: "info" },
          { component: "Progress", label: "Todos", value: 1, max: 3 },
          { component: "Link", text: "toolbelt docs", url: "https://example.com/toolbelt" },
        ],
      },
    });
    expect(result.result.kind).not.toBe("error");
    const panel = page.locator(".panel");
    await panel.waitFor();
    expect(await panel.locator(".ui-card-title").innerText()).toBe("Limits review");
    expect(await panel.locator(".ui-table td").allInnerTexts()).toEqual([
      "listing",
      "500",
      "1000",
      "search",
      "100",
      "100",
    ]);
    expect(await panel.locator("a").getAttribute("href")).toBe("https://example.com/toolbelt");
  });

  it("answers a question in the page and the blocked call gets the answer", async () => {
    const pending = call(
      "ask_user_question",
      {
        questions: [
          { question: "Which listing limit should ship?", header: "Limit", options: ["500", "1000", "2000"] },
        ],
      },
      "ask",
    );
    const form = page.locator("form.question-form");
    await form.waitFor();
    await form.getByLabel("1000").check();
    await form.getByRole("textbox", { name: "Notes" }).fill("agreed in review");
    if (shots) await page.screenshot({ path: join(shots, "console-question.png") });
    await form.getByRole("button", { name: "Send answer" }).click();
    const { result, text } = await pending;
    expect(result.kind).not.toBe("error");
    expect(text).toContain("1000");
    expect(text).toContain("agreed in review");
    await expect.poll(() => page.locator(".question-record").innerText()).toContain("answered: 1000");
    expect(await form.count()).toBe(0);
  });

  it("approves one shell command and denies another from the page", async () => {
    const approved = call("shell", { command: "printf 'checks: 3 passed\\n'" }, "shell-ok");
    const approval = page.locator(".approval");
    await approval.waitFor();
    expect(await approval.innerText()).toContain("printf");
    await approval.getByRole("button", { name: "Approve" }).click();
    expect((await approved).result.exit_code).toBe(0);

    const denied = call("shell", { command: "rm -rf build" }, "shell-denied");
    await page.locator(".approval").waitFor();
    expect(await page.locator(".approval").innerText()).toContain("rm -rf build");
    if (shots) await page.screenshot({ path: join(shots, "console-approval.png") });
    await page.locator(".approval").getByRole("button", { name: "Deny" }).click();
    const { result } = await denied;
    expect(result.kind).toBe("error");
    expect(result.code).toBe("EDENIED");

    await expect.poll(() => card("shell-denied").locator(".outcome").innerText()).toMatch(/^EDENIED: /);
    expect(await card("shell-ok").locator(".outcome").innerText()).toBe("exit 0");
    await expect
      .poll(() => page.locator(".approval-record").allInnerTexts())
      .toEqual([expect.stringContaining("approved"), expect.stringContaining("denied")]);
  });

  it("an approval card shows padding and terminal controls in a command instead of hiding them", async () => {
    const command = `echo building${" ".repeat(480)}; rm -rf x\x1b[2K\r\u202e`;
    const denied = call("shell", { command }, "shell-hidden");
    const approval = page.locator(".approval");
    await approval.waitFor();
    const summary = await approval.locator(".approval-summary").innerText();
    expect(summary).toContain("echo building␠×480; rm -rf x\\x1B[2K\\r\\u{202E}");
    expect(summary).not.toMatch(/[\x1b\r\u202e]/);
    expect(await approval.locator("pre").innerText()).toContain("\\u{202E}");
    await approval.getByRole("button", { name: "Deny" }).click();
    expect((await denied).result.code).toBe("EDENIED");
  });

  it("follows a background shell's live output on its card", async () => {
    const started = call(
      "shell",
      { command: "for i in 1 2 3; do echo tick $i; sleep 0.2; done", run_in_background: true },
      "shell-bg",
    );
    await page.locator(".approval").waitFor();
    await page.locator(".approval").getByRole("button", { name: "Approve" }).click();
    const { result } = await started;
    expect(result.kind).toBe("shell_started");
    // The card updates from the event stream, which may arrive just after the POST answers.
    await expect
      .poll(() => card("shell-bg").locator(".outcome").innerText(), { timeout: 10_000 })
      .toBe(`running in background (${String(result.shell_id)})`);
    await card("shell-bg").locator(".card-summary").click();
    await expect
      .poll(() => card("shell-bg").locator(".live-output").innerText(), { timeout: 10_000 })
      .toContain("tick 3");
  });

  it("replays a transcript written by toolbelt exec --events", async () => {
    const exec = spawn(process.execPath, [bin, "exec", "--events", "--trust", "--root", root], {
      stdio: ["pipe", "pipe", "pipe"],
    });
    let transcript = "";
    exec.stdout.on("data", (chunk: Buffer) => {
      transcript += chunk.toString();
    });
    exec.stdin.end(
      [
        { id: "r1", tool: "list_files", input: { pattern: "src" } },
        { id: "r2", tool: "search_files", input: { query: "TODO" } },
        { id: "r3", tool: "read_file", input: { path: "nope.ts" } },
      ]
        .map((line) => JSON.stringify(line))
        .join("\n"),
    );
    await new Promise((resolve) => exec.on("close", resolve));
    expect(transcript).toContain('"event"');

    const replay = await browser.context.newPage();
    await replay.goto(`${server.url}/?token=${encodeURIComponent(TOKEN)}`);
    await replay.locator(".status-open").waitFor();
    await replay.locator(".replay-input").setInputFiles({
      name: "exec.jsonl",
      mimeType: "application/x-ndjson",
      buffer: Buffer.from(transcript),
    });
    await replay.locator(".status-replay").waitFor();
    await expect.poll(() => replay.locator(".tool-card").count()).toBe(3);
    const summary = (id: string) => replay.locator(`.tool-card[data-call-id="${id}"] .outcome`).innerText();
    expect(await summary("r1")).toBe("1000 files (capped at 1000)");
    expect(await summary("r2")).toContain("200 matches (capped at 200)");
    expect(await summary("r3")).toMatch(/^ENOENT: /);
    await replay.close();
  });
});
