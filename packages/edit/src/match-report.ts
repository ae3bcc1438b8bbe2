import { type ErrorPayload, errorPayload } from "@toolbelt/core";
import type { Match, MatchFailure } from "./matcher.js";

export function isFailure<T extends object>(value: T | MatchFailure): value is MatchFailure {
  return "code" in value;
}

/** A failed match as the model sees it: what was tried, where the matches or the closest candidate are. */
export function failurePayload(failure: MatchFailure, extra: Record<string, unknown> = {}): ErrorPayload {
  return errorPayload(failure.code, failure.message, {
    ...extra,
    ...(failure.strategy ? { strategy: failure.strategy } : {}),
    // A one-character search can match thousands of times; the payload keeps the first 50.
    ...(failure.lines ? { match_count: failure.lines.length, match_lines: failure.lines.slice(0, 50) } : {}),
    ...(failure.candidate ? { candidate: failure.candidate } : {}),
    tried: failure.tried,
  });
}

export function strategyName(match: Match): string {
  return match.via ? `${match.strategy}+${match.via}` : match.strategy;
}
