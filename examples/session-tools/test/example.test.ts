import { describe, expect, it } from "vitest";
import { runDemo } from "../run.mjs";

type Demo = {
  results: Record<string, Array<Record<string, unknown>>>;
  events: Array<Record<string, unknown>>;
  late: Array<{ question_id: string; text: string }>;
  skills: string[];
  childRoot: string;
  docs: string;
  stale: Record<string, unknown>;
};

describe("examples/session-tools", () => {
  it("drives all five session tools and tool_search through the SDK", async () => {
    const lines: string[] = [];
    const demo = (await runDemo({ log: (line: string) => lines.push(line) })) as Demo;
    const { results, events } = demo;
    expect(results.update_todos?.map((r) => r.kind)).toEqual(["todos", "todos", "todos"]);
    expect(results.ask_user_question?.[0]).toMatchObject({
      kind: "question_answers",
      answers: [{ selected: ["Deprecate it first"] }],
      notes: "keep the old flag working",
    });
    const pending = results.ask_user_question?.[1];
    expect(pending).toMatchObject({ kind: "question_pending" });
    expect(demo.late).toMatchObject([{ question_id: pending?.question_id }]);
    expect(demo.late[0]?.text).toContain("next Tuesday");
    expect(results.present_ui?.map((r) => r.action)).toEqual(["created", "appended"]);
    expect(results.tool_search?.[0]).toMatchObject({ bound: ["changelog_entry"] });
    expect(results.changelog_entry?.[0]).toMatchObject({ text: "- Deprecate --legacy" });
    expect(results.list_projects?.[0]?.projects).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ key: "docs", available: true }),
        expect.objectContaining({ key: "acme/mobile", available: false }),
      ]),
    );
    expect(results.switch_project?.[0]).toMatchObject({ kind: "error", code: "EUNAVAILABLE" });
    expect(results.switch_project?.[1]).toMatchObject({
      kind: "project_switched",
      instructions: { file: "AGENTS.md" },
      new_skills: ["publish"],
    });
    expect(demo.childRoot).toBe(demo.docs);
    expect(demo.skills).toContain("publish");
    expect(demo.stale).toMatchObject({ kind: "error", code: "ENOENT" });
    expect(events.map((e) => e.type)).toEqual([
      "todos",
      "question",
      "question_answered",
      "question",
      "todos",
      "generative_ui",
      "generative_ui",
      "question_answered",
      "project_switched",
      "todos",
    ]);
    expect(events.find((e) => e.type === "question_answered" && e.late)).toBeDefined();
    expect(lines.join("\n")).toContain("[Plan: deprecate --legacy]");
  });
});
