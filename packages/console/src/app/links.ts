// Links in panels come from the model: only web and mail links become anchors.
const ALLOWED = new Set(["http:", "https:", "mailto:"]);

/** The href to use, or undefined when the link must be drawn as plain text. */
export function safeHref(href: unknown): string | undefined {
  if (typeof href !== "string" || href.trim() === "") return undefined;
  let url: URL;
  try {
    // No base: relative and scheme-less links are refused rather than resolved against the console.
    url = new URL(href.trim());
  } catch {
    return undefined;
  }
  return ALLOWED.has(url.protocol) ? url.href : undefined;
}
