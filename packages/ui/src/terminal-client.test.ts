import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { PassThrough } from "node:stream";
import { createSession } from "@toolbelt/core";
import { describe, expect, it } from "vitest";
import { family, terminalClient } from "./index.js";

function terminal() {
  const input = new PassThrough();
  const output = new PassThrough();
  let written = "";
  output.on("data", (chunk: Buffer) => {
    written += chunk.toString("utf8");
  });
  // Each prompt opens its own line reader: type only once the prompt is up, or the answer could
  // go to the reader of the previous prompt. Waits for the count-th time `text` was written.
  const shown = (text: string, count = 1) =>
    expect.poll(() => written.split(text).length - 1, { timeout: 10_000 }).toBeGreaterThanOrEqual(count);
  return { input, output, written: () => written, shown };
}

describe("terminalClient", () => {
  it("asks ask_user_question on the terminal: numbered options, own words, a retry, then notes", async () => {
    const root = mkdtempSync(path.join(os.tmpdir(), "tb-tty-"));
    const term = terminal();
    const client = terminalClient({ input: term.input, output: term.output });
    expect(client.capabilities).toContain("ask_user");
    const session = await createSession({ root, plugins: [family], client });
    try {
      const call = session.call("ask_user_question", {
        questions: [
          { question: "Which database?", header: "DB", options: ["Postgres", "SQLite"] },
          { question: "Which features?", options: ["auth", "search", "billing"], multiple: true },
          { question: "Name?", options: ["app"] },
        ],
      });
      // One prompt session for all three questions and the notes: lines typed ahead queue up.
      await term.shown("Which database?");
      term.input.write("5\n"); // out of range: asked again
      term.input.write("2\n");
      term.input.write("1, 3\n");
      term.input.write("toolbelt-demo\n");
      term.input.write("ship today\n");
      const result = await call;
      expect(result).toMatchObject({
        kind: "question_answers",
        answers: [{ selected: ["SQLite"] }, { selected: ["auth", "billing"] }, { text: "toolbelt-demo" }],
        notes: "ship today",
      });
      const shown = term.written();
      expect(shown).toContain("? (1/3) [DB] Which database?");
      expect(shown).toContain("  1. Postgres\n  2. SQLite");
      expect(shown).toContain("choose numbers from 1 to 2");
      expect(shown).toContain("Notes (optional");
    } finally {
      await session.close();
      rmSync(root, { recursive: true, force: true });
    }
  });

  it("answers permission prompts with y/N", async () => {
    const term = terminal();
    const client = terminalClient({ input: term.input, output: term.output });
    const prompt = {
      request_id: "r",
      tool: "shell",
      family: "shell",
      access: "execute",
      summary: "shell: ls",
    };
    const yes = client.approve?.(prompt);
    await term.shown("Allow?");
    term.input.write("y\n");
    expect(await yes).toBe(true);
    const no = client.approve?.(prompt);
    await term.shown("Allow?", 2);
    term.input.write("\n");
    expect(await no).toBe(false);
    expect(term.written()).toContain("! shell: ls (shell, execute)");
    expect(terminalClient({ approve: false }).approve).toBeUndefined();
  });

  it("never cuts a long summary silently: head, tail, the hidden count, and v shows all of it", async () => {
    const term = terminal();
    const client = terminalClient({ input: term.input, output: term.output });
    const summary = `shell: echo ${"a".repeat(3000)}; rm -rf x`;
    const answer = client.approve?.({
      request_id: "r",
      tool: "shell",
      family: "shell",
      access: "execute",
      summary,
    });
    await term.shown("Allow?");
    term.input.write("v\n");
    await term.shown("Allow?", 2);
    term.input.write("n\n");
    expect(await answer).toBe(false);
    const shown = term.written();
    expect(shown).toMatch(/! shell: echo a+ … \[\d+ characters hidden, type v to view all\] … a+; rm -rf x/);
    const hidden = Number(/\[(\d+) characters hidden/.exec(shown)?.[1]);
    const firstLine = shown.split("\n")[1] ?? "";
    expect(firstLine.replace(/ … \[.*\] … /, "").length + hidden).toBe(
      `! ${summary} (shell, execute)`.length,
    );
    expect(shown).toContain("Allow? [y/N/v] ");
    expect(shown).toContain(`Allow? [y/N/v] ${summary}\n`);
  });

  it("shows control characters in questions, options and summaries as escapes", async () => {
    const term = terminal();
    const client = terminalClient({ input: term.input, output: term.output });
    const answer = client.approve?.({
      request_id: "r",
      tool: "x",
      family: "x",
      access: "execute",
      summary: "x: ok\x1b[2K\rhidden",
    });
    await term.shown("Allow?");
    term.input.write("n\n");
    await answer;
    expect(term.written()).toContain("! x: ok\\x1B[2K\\rhidden (x, execute)");
    expect(term.written()).not.toContain("\x1b");
  });

  it("stops asking when the question is superseded (the prompt is aborted)", async () => {
    const term = terminal();
    const client = terminalClient({ input: term.input, output: term.output });
    const controller = new AbortController();
    const asked = client.ask?.(
      { question_id: "q", questions: [{ question: "Go?", options: ["yes"] }] },
      controller.signal,
    );
    await term.shown("Go?");
    controller.abort(new Error("superseded"));
    await expect(asked).rejects.toThrow("superseded");
  });
});
