/**
 * Parsing of SEARCH/REPLACE blocks:
 *
 *     path/to/file.ts
 *     ```ts
 *     <<<<<<< SEARCH
 *     old lines
 *     =======
 *     new lines
 *     >>>>>>> REPLACE
 *     ```
 *
 * The filename is the line immediately before the opening fence (or, without a fence, immediately
 * before the SEARCH marker); later blocks in the same fence, or without a filename of their own,
 * belong to the previous file.
 */
export type EditBlock = {
  /** 1-based number of the block in the content. */
  index: number;
  /** 1-based line of the SEARCH marker in the content. */
  line: number;
  file: string;
  search: string;
  replace: string;
};

export type BlockParse = { ok: true; blocks: EditBlock[] } | { ok: false; message: string };

const FENCE = /^\s*(`{3,}|~{3,})\s*([^\s`]*)?.*$/;
const SEARCH = /^\s*<{5,9}\s*SEARCH\s*$/;
const DIVIDER = /^\s*={5,9}\s*$/;
const REPLACE = /^\s*>{5,9}\s*REPLACE\s*$/;

const SHELL_LANGUAGES = new Set([
  "sh",
  "bash",
  "shell",
  "zsh",
  "fish",
  "ksh",
  "console",
  "shell-session",
  "shellsession",
  "terminal",
  "powershell",
  "ps",
  "ps1",
  "pwsh",
  "cmd",
  "bat",
  "batch",
]);

function isMarker(line: string): boolean {
  return SEARCH.test(line) || DIVIDER.test(line) || REPLACE.test(line) || FENCE.test(line);
}

/** A filename line as models write it: maybe bold, in backticks, with a trailing colon or a `#` heading. */
function cleanFilename(line: string): string | undefined {
  const quoted = /^\s*`([^`]+)`:?\s*$/.exec(line);
  if (quoted) return (quoted[1] as string).trim() || undefined;
  let name = line.trim();
  name = name.replace(/^#+\s*/, "");
  name = name.replace(/^(?:file(?:name)?|path)\s*:\s*/i, "");
  name = name.replace(/^[*_`'"]+/, "").replace(/[*_`'":]+$/, "");
  name = name.trim();
  if (name === "" || name.length > 500 || isMarker(line)) return undefined;
  // Prose has spaces or ends in a full stop; a path (unless quoted in backticks) has neither.
  if (/\s/.test(name)) return undefined;
  if (/[.!?]$/.test(name) && !/\.[A-Za-z0-9]+$/.test(name)) return undefined;
  // "Update:" introduces a block; "src/a.ts:" or "Makefile" names a file.
  if (line.trim().endsWith(":") && !/[./\\]/.test(name)) return undefined;
  return name;
}

export function parseBlocks(content: string): BlockParse {
  const lines = content.replace(/\r\n/g, "\n").split("\n");
  const blocks: EditBlock[] = [];
  let fence:
    | {
        marker: string;
        lang: string;
        file: string | undefined;
        line: number;
        hasBlock: boolean;
        body: string[];
      }
    | undefined;
  let current: string | undefined;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] as string;
    if (SEARCH.test(line)) {
      const previous = i > 0 ? (lines[i - 1] as string) : "";
      const ownName = FENCE.test(previous) || REPLACE.test(previous) ? undefined : cleanFilename(previous);
      const file =
        ownName ?? (fence && FENCE.test(previous) ? fence.file : undefined) ?? fence?.file ?? current;
      const index = blocks.length + 1;
      if (!file) {
        return {
          ok: false,
          message: `block ${index} (line ${i + 1}) has no filename: put the file's path alone on the line right before the opening fence`,
        };
      }
      const search: string[] = [];
      const replace: string[] = [];
      let j = i + 1;
      for (; j < lines.length && !DIVIDER.test(lines[j] as string); j++) {
        if (SEARCH.test(lines[j] as string) || REPLACE.test(lines[j] as string)) break;
        search.push(lines[j] as string);
      }
      if (j >= lines.length || !DIVIDER.test(lines[j] as string)) {
        return {
          ok: false,
          message: `block ${index} (line ${i + 1}, ${file}): expected a ======= line after the SEARCH section`,
        };
      }
      for (j++; j < lines.length && !REPLACE.test(lines[j] as string); j++) {
        if (SEARCH.test(lines[j] as string) || DIVIDER.test(lines[j] as string)) break;
        replace.push(lines[j] as string);
      }
      if (j >= lines.length || !REPLACE.test(lines[j] as string)) {
        return {
          ok: false,
          message: `block ${index} (line ${i + 1}, ${file}): expected a >>>>>>> REPLACE line to close the block`,
        };
      }
      blocks.push({ index, line: i + 1, file, search: search.join("\n"), replace: replace.join("\n") });
      current = file;
      if (fence) fence.hasBlock = true;
      i = j;
      continue;
    }
    const opening = FENCE.exec(line);
    if (opening) {
      if (fence && line.trim().startsWith(fence.marker) && line.trim().replace(/[`~]/g, "") === "") {
        if (!fence.hasBlock && SHELL_LANGUAGES.has(fence.lang) && fence.body.some((l) => l.trim() !== "")) {
          return {
            ok: false,
            message: `the content has a ${fence.lang} code block at line ${fence.line} (${JSON.stringify(
              fence.body
                .find((l) => l.trim() !== "")
                ?.trim()
                .slice(0, 80),
            )}): search_replace_block only edits files and never runs commands; run shell commands with the shell tool and send only SEARCH/REPLACE blocks here`,
          };
        }
        fence = undefined;
        continue;
      }
      if (!fence) {
        const previous = i > 0 ? cleanFilename(lines[i - 1] as string) : undefined;
        fence = {
          marker: (opening[1] as string).slice(0, 3),
          lang: (opening[2] ?? "").toLowerCase(),
          file: previous,
          line: i + 1,
          hasBlock: false,
          body: [],
        };
        if (previous) current = previous;
        continue;
      }
    }
    if (fence) fence.body.push(line);
  }
  if (
    fence &&
    !fence.hasBlock &&
    SHELL_LANGUAGES.has(fence.lang) &&
    fence.body.some((l) => l.trim() !== "")
  ) {
    return {
      ok: false,
      message: `the content has a ${fence.lang} code block at line ${fence.line}: search_replace_block only edits files and never runs commands; run shell commands with the shell tool`,
    };
  }
  if (blocks.length === 0) {
    return {
      ok: false,
      message:
        "no SEARCH/REPLACE blocks found. Format: the file path on its own line, then a fence, then\n<<<<<<< SEARCH\n(exact lines from the file)\n=======\n(replacement lines)\n>>>>>>> REPLACE\nthen the closing fence",
    };
  }
  return { ok: true, blocks };
}

/** Splits a section on lines consisting of only `...`. */
export function splitElisions(section: string): string[] {
  const pieces: string[][] = [[]];
  for (const line of section.split("\n")) {
    if (line.trim() === "...") pieces.push([]);
    else (pieces[pieces.length - 1] as string[]).push(line);
  }
  return pieces.map((p) => p.join("\n"));
}
