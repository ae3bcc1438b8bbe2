// Replays a saved `toolbelt exec --events` file: lines `{"event": {...}}` interleaved with the
// exec result lines `{"id", "tool", "result"}`.
import { applyEvent, applyResultLine, type ConsoleState, type Json } from "./model.js";

export type ReplaySummary = { events: number; results: number; skipped: number };

function isRecord(value: unknown): value is Json {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * Folds a JSONL transcript into `state`. When the file carries tool events the result lines repeat
 * them, so they are drawn only for files recorded without `--events`.
 */
export function loadReplay(state: ConsoleState, text: string): ReplaySummary {
  const events: Json[] = [];
  const results: Json[] = [];
  let skipped = 0;
  for (const raw of text.split("\n")) {
    const line = raw.trim();
    if (!line) continue;
    let parsed: unknown;
    try {
      parsed = JSON.parse(line);
    } catch {
      skipped++;
      continue;
    }
    if (isRecord(parsed) && isRecord(parsed.event) && typeof parsed.event.type === "string") {
      events.push(parsed.event);
    } else if (isRecord(parsed) && typeof parsed.type === "string" && typeof parsed.seq === "number") {
      // A bare event line, as an SSE capture would be saved.
      events.push(parsed);
    } else if (isRecord(parsed) && "result" in parsed) {
      results.push(parsed);
    } else {
      skipped++;
    }
  }
  for (const event of events) applyEvent(state, event);
  const hasToolEvents = events.some((e) => e.type === "tool_result" || e.type === "tool_call");
  if (!hasToolEvents) {
    for (const r of results) applyResultLine(state, { id: r.id, tool: r.tool, result: r.result });
  }
  return { events: events.length, results: results.length, skipped };
}
