// biome-ignore-all lint/performance/useDomNodeTextContent: these are Playwright locators (what the user sees), not DOM nodes
// The console in a real headless chromium, against a scripted server speaking the session API.
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { lacks } from "../../../test-support/capability.js";
import { browserSkipReason, launchBrowser, type TestBrowser } from "./testing/browser.js";
import { demoEvents, HOSTILE } from "./testing/demo-session.js";
import { type FakeServer, startFakeServer } from "./testing/fake-server.js";

const noChromium = lacks("chromium", browserSkipReason());

describe.skipIf(noChromium)("console page in chromium", () => {
  let browser: TestBrowser;
  let server: FakeServer;
  let page: Page;

  beforeAll(async () => {
    server = await startFakeServer();
    for (const event of demoEvents()) server.emit(event);
    browser = await launchBrowser();
    page = await browser.context.newPage();
    await page.goto(`${server.url}#token=${server.token}`);
    await page.locator(".status-open").waitFor();
  });

  afterAll(async () => {
    await browser?.close();
    await server?.close();
  });

  const card = (callId: string) => page.locator(`.tool-card[data-call-id="${callId}"]`);

  it("draws one card per call, with summaries that state the caps", async () => {
    await expect.poll(() => page.locator(".tool-card").count()).toBe(8);
    expect(await card("c1").locator(".card-summary").innerText()).toContain("1000 files (capped at 1000)");
    expect(await card("c2").locator(".card-summary").innerText()).toContain("200 matches (capped at 200)");
    expect(await card("c2").locator(".subject").innerText()).toBe("/TODO/ in src");
    expect(await card("c6").locator(".outcome").innerText()).toBe("exit 1");
    expect(await card("c8").locator(".outcome").innerText()).toBe("ENOENT: missing.ts does not exist");
  });

  it("expands a search card into matches under their files", async () => {
    await card("c2").locator(".card-summary").click();
    const file = card("c2").locator('.entry[data-path="src/module-0.ts"]');
    await file.waitFor();
    expect(await file.locator(".match").count()).toBe(5);
    expect(await file.locator(".match").first().innerText()).toMatch(/^10\s+\/\/ TODO\(0-0\): tidy this up$/);
    // Grouped by directory: src/ and src/lib/ each head their files.
    expect(await card("c2").locator(".dir-name").allInnerTexts()).toEqual(["src/", "src/lib/"]);
  });

  it("expands a listing into entries grouped by directory", async () => {
    await card("c1").locator(".card-summary").click();
    await card("c1").locator(".dir-name").first().waitFor();
    expect(await card("c1").locator(".dir-name").allInnerTexts()).toEqual([
      "src/",
      "src/components/",
      "src/lib/",
      "test/",
    ]);
    expect(await card("c1").locator(".entry").count()).toBe(1000);
  });

  it("shows a read body as text, never as markup", async () => {
    await card("c3").locator(".card-summary").click();
    const body = card("c3").locator(".file-body");
    await body.waitFor();
    expect(await body.innerText()).toContain(HOSTILE);
    expect(await page.locator(".tool-card img").count()).toBe(0);
    expect(await page.evaluate(() => (window as unknown as { __pwned?: number }).__pwned)).toBeUndefined();
  });

  it("shows write_file's own content argument, an edit's diff and shell output", async () => {
    await card("c4").locator(".card-summary").click();
    expect(await card("c4").locator(".written").innerText()).toContain("The listing cap is now 1000.");
    await card("c5").locator(".card-summary").click();
    expect((await card("c5").locator(".d-add").innerText()).trim()).toBe("+  fileListMaxEntries: 1000,");
    expect((await card("c5").locator(".d-del").innerText()).trim()).toBe("-  fileListMaxEntries: 500,");
    await card("c6").locator(".card-summary").click();
    expect(await card("c6").locator(".terminal").innerText()).toContain("expected 500 to be 1000");
    expect(await card("c6").locator(".exit").innerText()).toBe("exit code 1");
  });

  it("follows a background shell's live output", async () => {
    await card("c7").locator(".card-summary").click();
    const live = card("c7").locator(".live-output");
    await live.waitFor();
    expect(await live.innerText()).toContain("ready in 312 ms");
    server.emit({ type: "shell_output", shell_id: "sh-1", data: "  page reloaded\n" });
    await expect.poll(() => live.innerText()).toContain("page reloaded");
  });

  it("keeps the todo dock on the latest list with the current item highlighted", async () => {
    const current = page.locator('.todo-dock [aria-current="step"]');
    expect(await current.innerText()).toContain("Find every TODO");
    server.emit({
      type: "todos",
      todos: [
        { content: "Survey the repository", status: "completed" },
        { content: "Find every TODO", status: "completed" },
        { content: "Raise the listing cap", status: "in_progress" },
      ],
    });
    await expect.poll(() => current.innerText()).toContain("Raise the listing cap");
    expect(await page.locator(".todo-dock .todo").count()).toBe(3);
  });

  it("draws a panel: every component, unknown ones as placeholders, unsafe links as text", async () => {
    const panel = page.locator(".panel");
    await panel.waitFor();
    for (const component of [
      "Card",
      "Stack",
      "Heading",
      "Paragraph",
      "List",
      "Table",
      "DefinitionList",
      "Code",
      "Link",
      "Badge",
      "Progress",
    ]) {
      expect(await panel.locator(`[data-component="${component}"]`).count(), component).toBeGreaterThan(0);
    }
    expect(await panel.locator(".ui-table td").allInnerTexts()).toContain("fileListMaxEntries");
    expect(await panel.locator('[data-component="unknown"]').innerText()).toContain("Carousel");
    expect(await panel.locator("a").count()).toBe(1);
    expect(await panel.locator("a").getAttribute("href")).toBe("https://example.com/design");
    expect(await panel.locator(".ui-link-blocked").innerText()).toBe("sneaky");
    expect(await panel.locator('[data-component="Paragraph"]').innerText()).toContain(HOSTILE);
    expect(await page.evaluate(() => (window as unknown as { __pwned?: number }).__pwned)).toBeUndefined();
  });

  it("answers a question from the page and the answer reaches the server", async () => {
    const answered = server.ask("q1", [
      { question: "Which cap should apply?", options: ["500", "1000", "2000"] },
      { question: "Anything else?", options: [] },
    ]);
    const form = page.locator('form[data-question-id="q1"]');
    await form.waitFor();
    const send = form.getByRole("button", { name: "Send answer" });
    expect(await send.isDisabled()).toBe(true);
    await form.getByLabel("1000").check();
    await form.getByRole("textbox", { name: "Answer to: Anything else?" }).fill("Document it in NOTES.md");
    await form.getByRole("textbox", { name: "Notes" }).fill("from the console test");
    await send.click();
    expect(await answered).toEqual({
      answers: [{ options: [1] }, { text: "Document it in NOTES.md" }],
      notes: "from the console test",
    });
    const record = page.locator('.question-record[data-question-id="q1"]');
    await expect.poll(() => record.innerText()).toContain("answered: 1000; Document it in NOTES.md");
    expect(await form.count()).toBe(0);
    const post = server.received.find(
      (r) => r.method === "POST" && r.path === "/api/sessions/s1/questions/q1",
    );
    expect(post?.authorization).toBe(`Bearer ${server.token}`);
  });

  it("denies an approval from the page", async () => {
    const decision = server.requestApproval("r1", {
      tool: "shell",
      summary: "run: rm -rf build",
      input: { command: "rm -rf build" },
    });
    const prompt = page.locator('.approval[data-request-id="r1"]');
    await prompt.waitFor();
    expect(await prompt.innerText()).toContain("run: rm -rf build");
    expect(await page.locator(".waiting-pill").innerText()).toBe("1 waiting for you");
    await prompt.getByRole("button", { name: "Deny" }).click();
    expect(await decision).toBe(false);
    const record = page.locator('.approval-record[data-request-id="r1"]');
    await expect.poll(() => record.innerText()).toContain("denied by console");
    expect(await page.locator(".waiting-pill").count()).toBe(0);
  });

  it("shows questions raised before the page opened, from /pending", async () => {
    const late = await browser.context.newPage();
    const answered = server.ask("q2", [{ question: "Proceed?", options: ["yes", "no"] }]);
    await late.goto(`${server.url}#token=${server.token}`);
    const form = late.locator('form[data-question-id="q2"]');
    await form.waitFor();
    await form.getByLabel("yes").check();
    await form.getByRole("button", { name: "Send answer" }).click();
    expect(await answered).toEqual({ answers: [{ options: [0] }] });
    await late.close();
  });

  it("replays a saved exec --events file the same way", async () => {
    const replay = await browser.context.newPage();
    await replay.goto(server.url); // no token: replay only
    expect(await replay.locator(".message").innerText()).toContain("No token");
    const lines = demoEvents().map((event, seq) =>
      JSON.stringify({ event: { ...event, v: 1, seq, session: "old", at: "2026-01-01T00:00:00.000Z" } }),
    );
    lines.push(
      JSON.stringify({
        id: "c1",
        tool: "list_files",
        result: { kind: "file_list", count: 1000, capped: true },
      }),
    );
    await replay.locator(".replay-input").setInputFiles({
      name: "run.jsonl",
      mimeType: "application/x-ndjson",
      buffer: Buffer.from(`${lines.join("\n")}\n`),
    });
    await expect.poll(() => replay.locator(".tool-card").count()).toBe(8);
    expect(await replay.locator('.tool-card[data-call-id="c2"] .card-summary').innerText()).toContain(
      "200 matches (capped at 200)",
    );
    expect(await replay.locator(".panel").count()).toBe(1);
    expect(await replay.locator(".status").innerText()).toBe("replay");
    await replay.close();
  });

  it("follows its session as an attached client that draws UI and answers questions, attaching again after a drop", async () => {
    await expect
      .poll(() => server.attached())
      .toEqual([{ client: "console", capabilities: ["generative_ui", "ask_user"] }]);
    const attaches = () => server.received.filter((r) => r.method === "POST" && r.path.endsWith("/attach"));
    const before = attaches().length;
    const cards = await page.locator(".tool-card").count();
    server.dropStreams();
    await expect.poll(() => attaches().length, { timeout: 10_000 }).toBe(before + 1);
    await page.locator(".status-open").waitFor();
    expect(server.attached()).toHaveLength(1);
    // It resumes after the last event it saw: nothing drawn twice, and what comes next arrives.
    server.emit({ type: "tool_call", call_id: "after-drop", tool: "read_file", input: { path: "x.ts" } });
    await expect.poll(() => page.locator(".tool-card").count(), { timeout: 10_000 }).toBe(cards + 1);
  });

  it("sends the token with every API request", () => {
    const api = server.received.filter((r) => r.path.startsWith("/api/") && !r.path.endsWith("/events"));
    expect(api.length).toBeGreaterThan(0);
    for (const request of api) expect(request.authorization).toBe(`Bearer ${server.token}`);
  });
});
