import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { createSession, type EventOf, type Payload, type Session } from "@toolbelt/core";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { family, renderTreeText, validateTree } from "./index.js";

let root: string;
const open: Session[] = [];
beforeEach(() => {
  root = mkdtempSync(path.join(os.tmpdir(), "tb-ui-"));
});
afterEach(async () => {
  for (const s of open.splice(0)) await s.close();
  rmSync(root, { recursive: true, force: true });
});

async function session(capabilities = ["generative_ui"]): Promise<Session> {
  const s = await createSession({ root, plugins: [family], client: { capabilities } });
  open.push(s);
  return s;
}

function uiEvents(s: Session) {
  const events: Array<EventOf<"generative_ui">> = [];
  s.on("generative_ui", (e) => events.push(e));
  return events;
}

const every = {
  component: "Card",
  id: "report",
  title: "Build report",
  subtitle: "main",
  children: [
    { component: "Heading", text: "Summary", level: 2 },
    { component: "Paragraph", text: "Two checks failed." },
    { component: "List", items: ["lint", "types"], ordered: true },
    {
      component: "Table",
      columns: ["check", "ms"],
      rows: [
        ["lint", 120],
        ["types", null],
      ],
    },
    { component: "DefinitionList", items: [{ term: "branch", value: "main" }] },
    { component: "Code", code: "npm test", language: "sh" },
    { component: "Link", url: "https://example.com/run/1", text: "run" },
    {
      component: "Stack",
      direction: "horizontal",
      children: [
        { component: "Badge", text: "failed", tone: "danger" },
        { component: "Progress", value: 3, max: 4, label: "checks" },
      ],
    },
  ],
};

describe("present_ui", () => {
  it("is bound only when the client advertises generative_ui", async () => {
    expect((await session([])).bind().tools.map((t) => t.name)).not.toContain("present_ui");
    expect((await session()).bind().tools.map((t) => t.name)).toContain("present_ui");
  });

  it("validates all eleven components and publishes one event with the whole tree and its text", async () => {
    const s = await session();
    const events = uiEvents(s);
    const { payload, text } = await s.callWithText("present_ui", { tree: every });
    expect(payload).toMatchObject({ kind: "ui_presented", action: "created", surface: "report", nodes: 11 });
    expect(events).toHaveLength(1);
    expect(events[0]?.tree).toEqual(every);
    const plain = events[0]?.text ?? "";
    expect(plain.split("\n")).toEqual([
      "[Build report — main]",
      "  Summary",
      "  -------",
      "  Two checks failed.",
      "  1. lint",
      "  2. types",
      "  | check | ms  |",
      "  |-------|-----|",
      "  | lint  | 120 |",
      "  | types |     |",
      "  branch : main",
      "  ```sh",
      "  npm test",
      "  ```",
      "  run <https://example.com/run/1>",
      "  [danger: failed]  checks [###############-----] 75%",
    ]);
    expect(text).toContain(plain);
  });

  it("renders an unknown component as a placeholder row instead of failing", async () => {
    const s = await session();
    const events = uiEvents(s);
    const result = await s.call("present_ui", {
      tree: {
        component: "Stack",
        children: [
          { component: "Chart", series: [1, 2] },
          { component: "Paragraph", text: "ok" },
        ],
      },
    });
    expect(result).toMatchObject({ kind: "ui_presented", nodes: 3 });
    expect(events[0]?.text).toBe("[unsupported component: Chart]\nok");
    expect(events[0]?.tree).toEqual({
      component: "Stack",
      children: [
        { component: "Chart", unknown: true },
        { component: "Paragraph", text: "ok" },
      ],
    });
  });

  const refusals: Array<[string, unknown, string, string]> = [
    [
      "a paragraph over 2,000 chars",
      { component: "Paragraph", text: "x".repeat(2001) },
      "tree.text",
      "limit is 2000",
    ],
    [
      "a code block over 20,000 chars",
      { component: "Card", children: [{ component: "Code", code: "y".repeat(20_001) }] },
      "tree.children[0].code",
      "limit is 20000",
    ],
    [
      "a table cell over 500 chars",
      { component: "Table", columns: ["a", "b"], rows: [["ok", "z".repeat(501)]] },
      "tree.rows[0][1]",
      "limit is 500",
    ],
    [
      "a definition value over 500 chars",
      { component: "DefinitionList", items: [{ term: "t", value: "v".repeat(501) }] },
      "tree.items[0].value",
      "limit is 500",
    ],
    [
      "a javascript: link",
      { component: "Stack", children: [{ component: "Link", url: "javascript:alert(1)" }] },
      "tree.children[0].url",
      "http, https or mailto",
    ],
    [
      "more than 200 nodes",
      {
        component: "Stack",
        children: Array.from({ length: 200 }, () => ({ component: "Badge", text: "b" })),
      },
      "tree.children[199]",
      "more than 200 nodes",
    ],
    [
      "nesting deeper than 8",
      Array.from({ length: 8 }).reduce<unknown>((child) => ({ component: "Stack", children: [child] }), {
        component: "Paragraph",
        text: "deep",
      }),
      "tree.children[0].children[0].children[0].children[0].children[0].children[0].children[0].children[0]",
      "deeper than 8",
    ],
    [
      "more than 200,000 serialised chars",
      {
        component: "Stack",
        children: Array.from({ length: 11 }, () => ({ component: "Code", code: "c".repeat(19_000) })),
      },
      "tree",
      "serialised characters",
    ],
    ["a missing field", { component: "Heading" }, "tree", "Heading needs text"],
    ["an unknown field", { component: "Badge", text: "x", colour: "red" }, "tree", 'unknown field "colour"'],
  ];
  for (const [what, tree, where, message] of refusals) {
    it(`refuses ${what} with the path of the offending node, publishing nothing`, async () => {
      const s = await session();
      const events = uiEvents(s);
      const result: Payload = await s.call("present_ui", { tree });
      expect(result).toMatchObject({ kind: "error", code: "EINVAL_INPUT", path: where });
      expect(String(result.message)).toContain(message);
      expect(events).toHaveLength(0);
    });
  }

  it("mailto and http links pass", () => {
    expect(() => validateTree({ component: "Link", url: "mailto:a@b.c" })).not.toThrow();
    expect(() => validateTree({ component: "Link", url: "http://x.y/" })).not.toThrow();
    expect(() => validateTree({ component: "Link", url: "file:///etc/passwd" })).toThrow(/file/);
  });

  it("appends into a container by id and updates it by id; every event carries the whole tree", async () => {
    const s = await session();
    const events = uiEvents(s);
    await s.call("present_ui", {
      tree: {
        component: "Card",
        id: "run",
        title: "Tests",
        children: [
          { component: "Stack", id: "log", children: [] },
          { component: "Progress", value: 0 },
        ],
      },
    });
    const appended = await s.call("present_ui", {
      into: "log",
      tree: { component: "Paragraph", text: "a.test ok" },
    });
    expect(appended).toMatchObject({ action: "appended", surface: "run", nodes: 4 });
    await s.call("present_ui", { into: "log", tree: { component: "Paragraph", text: "b.test ok" } });
    expect(events).toHaveLength(3);
    expect(events[2]?.tree).toEqual({
      component: "Card",
      id: "run",
      title: "Tests",
      children: [
        {
          component: "Stack",
          id: "log",
          children: [
            { component: "Paragraph", text: "a.test ok" },
            { component: "Paragraph", text: "b.test ok" },
          ],
        },
        { component: "Progress", value: 0 },
      ],
    });
    const updated = await s.call("present_ui", {
      tree: {
        component: "Stack",
        id: "log",
        children: [{ component: "Badge", text: "all passed", tone: "success" }],
      },
    });
    expect(updated).toMatchObject({ action: "updated", surface: "run" });
    expect(events[3]?.text).toBe("[Tests]\n  [success: all passed]\n  [--------------------] 0%");
    // A replaced surface root keeps its id; unknown targets are refused, never a new surface.
    expect(
      await s.call("present_ui", { into: "nope", tree: { component: "Paragraph", text: "x" } }),
    ).toMatchObject({
      code: "EINVAL_INPUT",
      message: expect.stringContaining("known ids: run, log"),
    });
    expect(events).toHaveLength(4);
  });

  it("refuses an append that would push the surface over a limit, naming the container's path", async () => {
    const s = await session();
    const children = Array.from({ length: 198 }, () => ({ component: "Badge", text: "b" }));
    await s.call("present_ui", {
      tree: { component: "Card", id: "c", children: [{ component: "Stack", id: "s", children }] },
    });
    const over = await s.call("present_ui", {
      into: "s",
      tree: { component: "Badge", text: "one too many" },
    });
    expect(over).toMatchObject({ code: "EINVAL_INPUT", path: "surface.children[0].children[198]" });
  });

  it("takes the tree as JSON text too (OpenAI strict schemas close every object)", async () => {
    const s = await session();
    const events = uiEvents(s);
    const tree = { component: "Paragraph", text: "from json" };
    expect(await s.call("present_ui", { tree_json: JSON.stringify(tree) })).toMatchObject({
      action: "created",
    });
    expect(events[0]?.tree).toEqual(tree);
    expect(await s.call("present_ui", { tree_json: "{nope" })).toMatchObject({
      code: "EINVAL_INPUT",
      field: "tree_json",
    });
    expect(await s.call("present_ui", { tree, tree_json: JSON.stringify(tree) })).toMatchObject({
      code: "EINVAL_INPUT",
    });
    expect(await s.call("present_ui", {})).toMatchObject({ code: "EINVAL_INPUT", field: "tree" });
  });

  it("renders plain text for terminals and transcripts", () => {
    expect(renderTreeText(validateTree({ component: "Heading", text: "Hi", level: 1 }))).toBe("Hi\n==");
  });
});
