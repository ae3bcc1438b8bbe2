import { type ErrorPayload, errorPayload } from "@toolbelt/core";
import { keepFinalNewline, spliceEach, type TextDocument } from "./document.js";
import { strategyName } from "./match-report.js";
import { closestCandidate, locateAll } from "./matcher.js";
import type { PlannedEdit } from "./multi-edit.js";

/**
 * Every occurrence of `search` replaced. Deliberately exact (line endings aside) in every backend: a
 * tolerant match repeated across a file would rewrite code that merely resembles the search text.
 */
export function replaceEvery(
  doc: TextDocument,
  rel: string,
  search: string,
  replace: string,
  label: string,
): PlannedEdit | ErrorPayload {
  if (search.trim() === "") {
    return errorPayload("EINVAL_INPUT", `${label} is whitespace only; replace_all would rewrite every gap`, {
      path: rel,
    });
  }
  const matches = locateAll(doc, search, replace);
  if (matches.length === 0) {
    const candidate = closestCandidate(doc, search);
    const where = candidate
      ? `\nClosest candidate, lines ${candidate.start_line}-${candidate.end_line}:\n${candidate.text}`
      : "";
    return errorPayload(
      "ENO_MATCH",
      `${label} was not found in ${rel} (exact match, line endings ignored); nothing was changed.${where}`,
      { path: rel, ...(candidate ? { candidate } : {}) },
    );
  }
  // One pass for every match: a splice per match cost the whole file each (see spliceEach).
  const after = spliceEach(doc, matches);
  return { after: keepFinalNewline(doc, after), strategies: matches.map(strategyName) };
}
