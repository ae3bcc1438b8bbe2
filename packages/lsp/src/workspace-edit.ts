import { ToolbeltError } from "@toolbelt/core";
import type { TextEdit, WorkspaceEdit } from "vscode-languageserver-protocol";
import { fromUri } from "./uri.js";

export type FileEdits = { abs: string; edits: TextEdit[]; version?: number | null };

/** A part of a workspace edit that is not applied, and why. */
export type RefusedChange = { target: string; why: string };

/**
 * The text edits of a workspace edit per file. File creations, renames and deletions and non-file
 * URIs are not applied: they come back in `refused`, so the caller can refuse the whole edit and
 * say what the server asked for.
 */
export function editsByFile(edit: WorkspaceEdit | null | undefined): {
  files: FileEdits[];
  refused: RefusedChange[];
} {
  const files = new Map<string, FileEdits>();
  const refused: RefusedChange[] = [];
  const add = (uri: string, edits: TextEdit[], version?: number | null) => {
    const abs = fromUri(uri);
    if (!abs) {
      refused.push({ target: uri, why: "not a file: URI" });
      return;
    }
    const entry = files.get(abs) ?? { abs, edits: [] };
    entry.edits.push(...edits);
    if (version !== undefined) entry.version = version;
    files.set(abs, entry);
  };
  if (edit?.documentChanges) {
    for (const change of edit.documentChanges) {
      if (!("textDocument" in change)) {
        const target = change.kind === "rename" ? `${change.oldUri} -> ${change.newUri}` : change.uri;
        refused.push({ target, why: `a file ${change.kind} (only text edits are applied)` });
        continue;
      }
      add(
        change.textDocument.uri,
        change.edits.filter((e): e is TextEdit => "range" in e && "newText" in e),
        change.textDocument.version,
      );
    }
  } else if (edit?.changes) {
    for (const [uri, edits] of Object.entries(edit.changes)) add(uri, edits);
  }
  return { files: [...files.values()], refused };
}

function lineStarts(text: string): number[] {
  const starts = [0];
  for (let i = 0; i < text.length; i++) if (text.charCodeAt(i) === 10) starts.push(i + 1);
  return starts;
}

/** Applies LSP text edits (UTF-16 positions) to `text`; overlapping edits are an ECONFLICT. */
export function applyTextEdits(text: string, edits: TextEdit[], label: string): string {
  const starts = lineStarts(text);
  const offset = (p: { line: number; character: number }) => {
    if (p.line >= starts.length) return text.length;
    const start = starts[p.line] as number;
    const end = p.line + 1 < starts.length ? (starts[p.line + 1] as number) - 1 : text.length;
    return Math.min(start + p.character, end);
  };
  const spans = edits
    .map((e, index) => ({ start: offset(e.range.start), end: offset(e.range.end), text: e.newText, index }))
    .sort((a, b) => a.start - b.start || a.end - b.end || a.index - b.index);
  for (let i = 1; i < spans.length; i++) {
    const prev = spans[i - 1] as (typeof spans)[number];
    const cur = spans[i] as (typeof spans)[number];
    if (cur.start < prev.end)
      throw new ToolbeltError("ECONFLICT", `the server sent overlapping edits for ${label}`);
  }
  let out = "";
  let at = 0;
  for (const span of spans) {
    out += text.slice(at, span.start) + span.text;
    at = span.end;
  }
  return out + text.slice(at);
}

/** 1-based numbers of the lines an edit touches, in the new text. */
export function changedLines(edits: TextEdit[]): number[] {
  // Shift each edit's start line by the lines added or removed by the edits before it.
  const sorted = [...edits].sort(
    (a, b) => a.range.start.line - b.range.start.line || a.range.start.character - b.range.start.character,
  );
  const out = new Set<number>();
  let shift = 0;
  for (const e of sorted) {
    const removed = e.range.end.line - e.range.start.line;
    const added = e.newText.split("\n").length - 1;
    for (let l = 0; l <= added; l++) out.add(e.range.start.line + shift + l + 1);
    shift += added - removed;
  }
  return [...out].sort((a, b) => a - b);
}
