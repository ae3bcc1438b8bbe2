import type { ToolbeltEvent } from "@toolbelt/core";
import { EventStream } from "@toolbelt/core/internal";
import { describe, expect, it } from "vitest";
import { safeHref } from "./links.js";
import {
  applyEvent,
  applyPending,
  emptyState,
  pendingApprovals,
  pendingQuestions,
  SHELL_OUTPUT_KEEP,
} from "./model.js";
import { loadReplay } from "./replay.js";

function recorded(fn: (stream: EventStream) => void): ToolbeltEvent[] {
  const stream = new EventStream("s");
  const events: ToolbeltEvent[] = [];
  stream.on("*", (e) => events.push(e));
  fn(stream);
  return events;
}

describe("the event fold", () => {
  it("draws one card per call and never applies an event twice", () => {
    const events = recorded((s) => {
      s.emit({ type: "tool_call", call_id: "a", tool: "read_file", input: { path: "x" } });
      s.emit({
        type: "tool_result",
        call_id: "a",
        tool: "read_file",
        result: { kind: "file" },
        text: "hi",
        duration_ms: 1,
      });
    });
    const state = emptyState();
    for (const e of [...events, ...events]) applyEvent(state, e);
    expect(Object.keys(state.cards)).toEqual(["a"]);
    expect(state.cards.a).toMatchObject({
      tool: "read_file",
      input: { path: "x" },
      text: "hi",
      durationMs: 1,
    });
    expect(state.timeline).toHaveLength(1);
  });

  it("draws a client-brought tool's call once, marked as the client's", () => {
    const events = recorded((s) => {
      s.emit({ type: "tool_call", call_id: "k", tool: "device_time", input: {} });
      s.emit({ type: "client_tool_call", call_id: "k", tool: "device_time", input: {} });
      s.emit({ type: "client_tool_result", call_id: "k", tool: "device_time", result: { kind: "time" } });
      s.emit({
        type: "tool_result",
        call_id: "k",
        tool: "device_time",
        result: { kind: "time" },
        text: "12:00",
        duration_ms: 3,
      });
    });
    const state = emptyState();
    for (const e of events) applyEvent(state, e);
    expect(Object.keys(state.cards)).toEqual(["k"]);
    expect(state.cards.k).toMatchObject({ client: true, text: "12:00" });
  });

  it("keeps questions and approvals pending until they are resolved", () => {
    const events = recorded((s) => {
      s.emit({
        type: "question",
        question_id: "q",
        questions: [{ question: "Go?", options: ["yes", "no"] }],
      });
      s.emit({
        type: "approval_requested",
        request_id: "r",
        tool: "shell",
        family: "shell",
        access: "execute",
        summary: "run ls",
      });
    });
    const state = emptyState();
    for (const e of events) applyEvent(state, e);
    expect(pendingQuestions(state).map((q) => q.id)).toEqual(["q"]);
    expect(pendingApprovals(state).map((a) => a.id)).toEqual(["r"]);
    applyEvent(state, {
      type: "question_answered",
      question_id: "q",
      answers: [{ options: [0] }],
      seq: 5,
      session: "s",
    });
    applyEvent(state, {
      type: "approval_resolved",
      request_id: "r",
      approved: false,
      by: "console",
      seq: 6,
      session: "s",
    });
    expect(pendingQuestions(state)).toEqual([]);
    expect(state.approvals.r?.resolved).toEqual({ approved: false, by: "console" });
  });

  it("merges /pending without duplicating what the stream already showed", () => {
    const state = emptyState();
    applyPending(state, {
      questions: [{ question_id: "q", questions: [{ question: "Which?", options: ["a"] }] }],
      approvals: [{ request_id: "r", tool: "shell", family: "shell", access: "execute", summary: "x" }],
    });
    applyPending(state, { questions: [{ question_id: "q", questions: [] }], approvals: [] });
    expect(state.timeline.map((t) => t.kind)).toEqual(["question", "approval"]);
    expect(state.questions.q?.questions[0]?.question).toBe("Which?");
  });

  it("replaces a panel updated by its root id and bounds shell output", () => {
    const state = emptyState();
    applyEvent(state, {
      type: "generative_ui",
      tree: { type: "Card", id: "p" },
      text: "one",
      seq: 0,
      session: "s",
    });
    applyEvent(state, {
      type: "generative_ui",
      tree: { type: "Card", id: "p", title: "2" },
      text: "two",
      seq: 1,
      session: "s",
    });
    expect(Object.values(state.panels).map((p) => p.text)).toEqual(["two"]);
    applyEvent(state, {
      type: "shell_output",
      shell_id: "sh",
      data: "x".repeat(SHELL_OUTPUT_KEEP),
      seq: 2,
      session: "s",
    });
    applyEvent(state, { type: "shell_output", shell_id: "sh", data: "tail", seq: 3, session: "s" });
    expect(state.shells.sh?.length).toBe(SHELL_OUTPUT_KEEP);
    expect(state.shells.sh?.endsWith("tail")).toBe(true);
  });
});

describe("replay", () => {
  it("draws exec result lines as cards when the file has no tool events", () => {
    const state = emptyState();
    const summary = loadReplay(
      state,
      [
        JSON.stringify({ id: 1, tool: "list_files", result: { kind: "file_list", count: 3 } }),
        "not json",
        JSON.stringify({
          id: null,
          tool: null,
          result: { kind: "error", code: "EINVAL_INPUT", message: "bad" },
        }),
      ].join("\n"),
    );
    expect(summary).toEqual({ events: 0, results: 2, skipped: 1 });
    expect(Object.values(state.cards).map((c) => c.tool)).toEqual(["list_files", "?"]);
  });

  it("prefers the events when the file has them, so a call is drawn once", () => {
    const events = recorded((s) => {
      s.emit({ type: "tool_call", call_id: "x", tool: "read_file", input: {} });
      s.emit({
        type: "tool_result",
        call_id: "x",
        tool: "read_file",
        result: { kind: "file" },
        duration_ms: 1,
      });
    });
    const lines = [
      ...events.map((event) => JSON.stringify({ event })),
      JSON.stringify({ id: 7, tool: "read_file", result: { kind: "file" } }),
    ];
    const state = emptyState();
    loadReplay(state, lines.join("\n"));
    expect(Object.keys(state.cards)).toEqual(["x"]);
  });
});

describe("safeHref", () => {
  it("allows only http, https and mailto", () => {
    expect(safeHref("https://example.com/a")).toBe("https://example.com/a");
    expect(safeHref("mailto:a@example.com")).toBe("mailto:a@example.com");
    for (const bad of [
      "javascript:alert(1)",
      " JavaScript:alert(1)",
      "data:text/html,x",
      "/relative",
      "//evil.com",
      "vbscript:x",
      "",
      3,
    ]) {
      expect(safeHref(bad), String(bad)).toBeUndefined();
    }
  });
});
