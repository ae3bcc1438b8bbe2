// End to end: a project's MCP server (the toy fixture) asks the user for input while the built CLI
// calls it — answered by policy in a headless exec, on the terminal of `run --interactive`, and as a
// pending question of `serve --http` that an HTTP client answers.
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { assertBuilt } from "../../toolbelt/test/cli-harness.js";
import { startHttp } from "../../toolbelt/test/serve-fixture.js";

const BIN = fileURLToPath(new URL("../../toolbelt/dist/bin.js", import.meta.url));
const TOY = fileURLToPath(new URL("../src/__fixtures__/toy-server.mjs", import.meta.url));
beforeAll(assertBuilt);

const roots: string[] = [];
afterAll(() => {
  for (const dir of roots.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function project(config: Record<string, unknown> = {}): string {
  const dir = realpathSync(mkdtempSync(path.join(os.tmpdir(), "tb-elicit-e2e-")));
  roots.push(dir);
  writeFileSync(
    path.join(dir, ".mcp.json"),
    JSON.stringify({ mcpServers: { toy: { command: process.execPath, args: [TOY] } } }),
  );
  mkdirSync(path.join(dir, "configs"));
  writeFileSync(
    path.join(dir, "configs", "app.json"),
    JSON.stringify({ agent: { tool_search: "off" }, ...config }),
  );
  return dir;
}

type Run = { code: number | null; stdout: string; stderr: string };
function cli(args: string[], stdin = ""): Promise<Run> {
  return new Promise((resolve, reject) => {
    // The test's own projects: trusted, so their .mcp.json starts the toy server.
    const child = spawn(process.execPath, [BIN, ...args], { env: { ...process.env, TOOLBELT_TRUST: "1" } });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (c: Buffer) => {
      stdout += c.toString();
    });
    child.stderr.on("data", (c: Buffer) => {
      stderr += c.toString();
    });
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(stdin);
  });
}

const replyOf = (result: { content?: Array<{ text?: string }> }) =>
  JSON.parse((result.content?.[0]?.text ?? "").replace(/^order: /, "")) as unknown;

describe("elicitation through the built CLI", () => {
  it("a headless exec does not offer elicitation, and accept_defaults answers with the form's defaults", async () => {
    const call = `${JSON.stringify({ id: "1", tool: "mcp__toy__order", input: {} })}\n`;
    const headless = await cli(["exec", "--root", project()], call);
    const refused = JSON.parse(headless.stdout.trim().split("\n")[0] as string);
    expect(refused.result).toMatchObject({ kind: "error", message: "no elicitation: the client cannot ask" });

    const root = project({ tools: { mcp: { elicitation: "accept_defaults" } } });
    const run = await cli(["exec", "--root", root, "--events"], call);
    const lines = run.stdout
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l));
    const answer = lines.find((l) => l.id === "1");
    expect(replyOf(answer.result)).toEqual({
      action: "accept",
      content: { item: "tea", cups: 2, sugar: false },
    });
    expect(answer.result.elicitations).toEqual([
      { message: "What would you like?", action: "accept", by: "policy" },
    ]);
    const resolved = lines.find((l) => l.event?.type === "elicitation_resolved");
    expect(resolved?.event).toMatchObject({ server: "toy", action: "accept", by: "policy" });
  });

  it("run --interactive asks the form on the terminal, one question per field, and sends the typed values", async () => {
    // Answer: yes; Item: 2 (coffee); cups: 4; note: my words; email: - (left empty); sugar: 1 (yes); notes: none.
    const typed = ["1", "2", "4", "extra hot", "-", "1", ""].join("\n");
    const run = await cli(
      ["run", "mcp__toy__order", "--root", project(), "--input", "{}", "--interactive"],
      `${typed}\n`,
    );
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).toContain("MCP server toy asks: What would you like?");
    expect(run.stderr).toContain("How many (a whole number from 1 to 9; - for the default, 2)");
    expect(replyOf(JSON.parse(run.stdout))).toEqual({
      action: "accept",
      content: { item: "coffee", cups: 4, note: "extra hot", sugar: true },
    });
  });

  it("run --interactive: a typed value that does not fit is declined, never sent", async () => {
    const typed = ["1", "1", "many", "-", "-", "3", ""].join("\n");
    const run = await cli(
      ["run", "mcp__toy__order", "--root", project(), "--input", "{}", "--interactive"],
      `${typed}\n`,
    );
    const payload = JSON.parse(run.stdout);
    expect(replyOf(payload)).toEqual({ action: "decline" });
    expect(payload.elicitations[0].reason).toContain('"many" is not a number');
  });

  it("serve --http: the form is a pending question a client that can answer sees and answers", async () => {
    const root = project();
    const server = await startHttp(root);
    try {
      const api = (p: string, init: RequestInit = {}) =>
        fetch(`${server.url}${p}`, {
          ...init,
          headers: { authorization: `Bearer ${server.token}`, "content-type": "application/json" },
        });
      const opened = (await (
        await api("/api/sessions", { method: "POST", body: JSON.stringify({ capabilities: ["ask_user"] }) })
      ).json()) as { id: string };
      const call = api(`/api/sessions/${opened.id}/calls`, {
        method: "POST",
        body: JSON.stringify({ tool: "mcp__toy__order", input: {} }),
      }).then((r) => r.json() as Promise<{ result: { content: Array<{ text: string }> } }>);
      let question:
        | { question_id: string; questions: Array<{ question: string; options: string[] }> }
        | undefined;
      await expect
        .poll(
          async () => {
            const pending = (await (await api(`/api/sessions/${opened.id}/pending`)).json()) as {
              questions: Array<NonNullable<typeof question>>;
            };
            question = pending.questions[0];
            return question?.questions[0]?.question;
          },
          { timeout: 20_000 },
        )
        .toBe("MCP server toy asks: What would you like?");
      const q = question as NonNullable<typeof question>;
      expect(q.questions.map((x) => x.options)).toEqual([
        ["Answer", "Decline"],
        ["tea", "coffee"],
        [],
        [],
        [],
        ["yes", "no", "(leave empty)"],
      ]);
      const answered = await api(`/api/sessions/${opened.id}/questions/${q.question_id}`, {
        method: "POST",
        body: JSON.stringify({
          answers: [
            { options: [0] },
            { options: [1] },
            { text: "3" },
            { text: "-" },
            { text: "me@example.org" },
            { options: [2] },
          ],
        }),
      });
      expect(answered.status).toBe(200);
      expect(replyOf((await call).result)).toEqual({
        action: "accept",
        content: { item: "coffee", cups: 3, email: "me@example.org" },
      });
    } finally {
      await server.stop();
    }
  });

  it("serve --http: with no client that can answer attached, the server's question is declined and the result says so", async () => {
    const server = await startHttp(project());
    try {
      const api = (p: string, init: RequestInit = {}) =>
        fetch(`${server.url}${p}`, {
          ...init,
          headers: { authorization: `Bearer ${server.token}`, "content-type": "application/json" },
        });
      const opened = (await (await api("/api/sessions", { method: "POST", body: "{}" })).json()) as {
        id: string;
      };
      const reply = (await (
        await api(`/api/sessions/${opened.id}/calls`, {
          method: "POST",
          body: JSON.stringify({ tool: "mcp__toy__order", input: {} }),
        })
      ).json()) as { result: { content: Array<{ text: string }>; elicitations: unknown }; text: string };
      expect(replyOf(reply.result)).toEqual({ action: "decline" });
      expect(reply.text).toContain("the client declined: nobody who can answer is attached to this session");
    } finally {
      await server.stop();
    }
  });
});
