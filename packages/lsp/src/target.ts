import { ToolbeltError, type ToolContext, z } from "@toolbelt/core";
import type { DocumentSymbol, SymbolInformation } from "vscode-languageserver-protocol";
import { type Backend, type LspFamilyOptions, managerOf } from "./manager.js";
import { readProjectFile } from "./project-files.js";
import { toUri } from "./uri.js";

export const targetFields = {
  path: z.string().min(1).describe("The file, relative to the project root."),
  line: z.number().int().positive().optional().describe("1-based line of the symbol."),
  column: z
    .number()
    .int()
    .positive()
    .optional()
    .describe("1-based column; without it, the first identifier on the line that is not a keyword."),
  symbol: z
    .string()
    .min(1)
    .optional()
    .describe(
      'A name path resolved through the file\'s symbols instead of line/column, e.g. "Class/method" or "greet".',
    ),
};

export const targetSchema = z.object(targetFields);
export type TargetInput = z.output<typeof targetSchema>;

/** Where a request points: the file, its backend, and an LSP (0-based) position. */
export type Target = {
  abs: string;
  rel: string;
  backend: Backend;
  position: { line: number; character: number };
  /** The symbol name when given by name path (or found at the position). */
  name?: string;
};

/** `path:line:column` of a target, with the symbol name when there is one. */
export function targetLabel(target: Target): string {
  const where = `${target.rel}:${target.position.line + 1}:${target.position.character + 1}`;
  return target.name ? `${where} ${target.name}` : where;
}

const KEYWORDS = new Set(
  "export default async function class interface type enum const let var declare abstract public private protected static readonly get set new return import from as def fn pub struct impl trait mod func package val override".split(
    " ",
  ),
);

export async function resolveTarget(
  input: TargetInput,
  ctx: ToolContext,
  options: LspFamilyOptions,
): Promise<Target> {
  if (input.line === undefined && input.symbol === undefined)
    throw new ToolbeltError(
      "EINVAL_INPUT",
      "give line (and optionally column) or symbol (a name path such as Class/method)",
      {
        details: { field: "line" },
      },
    );
  const resolved = ctx.resolve(input.path);
  if (!resolved.exists)
    throw new ToolbeltError("ENOENT", `no such file: ${resolved.rel}`, { details: { path: resolved.rel } });
  const manager = managerOf(ctx.session, options);
  const backend = await manager.backendFor(ctx.root, ctx.config, resolved.abs);
  await backend.syncOpen();
  await backend.sync(resolved.abs);
  const base = { abs: resolved.abs, rel: resolved.rel, backend };
  if (input.symbol !== undefined && input.line === undefined) {
    const found = await findSymbol(backend, resolved.abs, resolved.rel, input.symbol, ctx.signal);
    return { ...base, position: found.position, name: found.name };
  }
  const text =
    backend.text(resolved.abs) ??
    (await readProjectFile((p) => ctx.openFile(p), resolved.abs, resolved.rel, ctx.limits.fileMaxBytes)).text;
  const lines = text.split(/\r?\n/);
  const lineNo = input.line as number;
  const lineText = lines[lineNo - 1];
  if (lineText === undefined)
    throw new ToolbeltError(
      "EINVAL_INPUT",
      `${resolved.rel} has ${lines.length} lines; line ${lineNo} does not exist`,
      {
        details: { field: "line" },
      },
    );
  if (input.column !== undefined) {
    if (input.column > lineText.length + 1)
      throw new ToolbeltError(
        "EINVAL_INPUT",
        `line ${lineNo} of ${resolved.rel} has ${lineText.length} characters; column ${input.column} is past its end`,
        { details: { field: "column" } },
      );
    return { ...base, position: { line: lineNo - 1, character: input.column - 1 } };
  }
  const column = input.symbol ? columnOfName(lineText, lastSegment(input.symbol)) : firstIdentifier(lineText);
  if (column === undefined)
    throw new ToolbeltError(
      "ENO_MATCH",
      input.symbol
        ? `${lastSegment(input.symbol)} does not occur on line ${lineNo} of ${resolved.rel}`
        : `line ${lineNo} of ${resolved.rel} has no identifier; give a column`,
    );
  return { ...base, position: { line: lineNo - 1, character: column } };
}

function lastSegment(namePath: string): string {
  return namePath.split("/").filter(Boolean).at(-1) ?? namePath;
}

function columnOfName(line: string, name: string): number | undefined {
  const re = new RegExp(`(?<![\\w$])${name.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}(?![\\w$])`);
  const m = re.exec(line);
  return m ? m.index : undefined;
}

function firstIdentifier(line: string): number | undefined {
  const re = /[A-Za-z_$][\w$]*/g;
  let first: number | undefined;
  for (let m = re.exec(line); m; m = re.exec(line)) {
    first ??= m.index;
    if (!KEYWORDS.has(m[0])) return m.index;
  }
  return first;
}

type Named = { path: string[]; symbol: { name: string; line: number; character: number; kind: number } };

/** Every symbol of the file with its name path (hierarchical or flat answers alike). */
export function flattenSymbols(result: Array<DocumentSymbol | SymbolInformation> | null): Named[] {
  const out: Named[] = [];
  const walk = (symbols: DocumentSymbol[], parents: string[]) => {
    for (const s of symbols) {
      const p = [...parents, s.name];
      out.push({
        path: p,
        symbol: {
          name: s.name,
          line: s.selectionRange.start.line,
          character: s.selectionRange.start.character,
          kind: s.kind,
        },
      });
      if (s.children) walk(s.children, p);
    }
  };
  const list = result ?? [];
  if (list.length && "location" in (list[0] as object)) {
    for (const s of list as SymbolInformation[]) {
      out.push({
        path: s.containerName ? [...s.containerName.split("."), s.name] : [s.name],
        symbol: {
          name: s.name,
          line: s.location.range.start.line,
          character: s.location.range.start.character,
          kind: s.kind,
        },
      });
    }
  } else walk(list as DocumentSymbol[], []);
  return out;
}

function normaliseName(name: string): string {
  return name
    .replace(/\(.*\)$/, "")
    .replace(/<.*>$/, "")
    .trim();
}

export async function findSymbol(
  backend: Backend,
  abs: string,
  rel: string,
  namePath: string,
  signal?: AbortSignal,
): Promise<{ position: { line: number; character: number }; name: string }> {
  const symbols = flattenSymbols(
    await backend.request<Array<DocumentSymbol | SymbolInformation> | null>(
      "textDocument/documentSymbol",
      { textDocument: { uri: toUri(abs) } },
      signal ? { signal } : {},
    ),
  );
  let segments = namePath.split("/").filter(Boolean);
  if (segments.length === 1 && namePath.includes(".")) segments = namePath.split(".").filter(Boolean);
  const matches = (full: boolean) =>
    symbols.filter((s) => {
      const names = s.path.map(normaliseName);
      if (full ? names.length !== segments.length : names.length < segments.length) return false;
      const tail = names.slice(names.length - segments.length);
      return tail.every((n, i) => n === segments[i]);
    });
  let found = matches(true);
  if (found.length === 0) found = matches(false);
  if (found.length === 1) {
    const s = (found[0] as Named).symbol;
    return { position: { line: s.line, character: s.character }, name: s.name };
  }
  if (found.length === 0) {
    const top = symbols
      .filter((s) => s.path.length === 1)
      .map((s) => s.path[0])
      .slice(0, 30);
    throw new ToolbeltError(
      "ENO_MATCH",
      `no symbol ${namePath} in ${rel}; top-level symbols: ${top.join(", ") || "(none)"}`,
      {
        details: { symbol: namePath },
      },
    );
  }
  const list = found.slice(0, 10).map((s) => `${s.path.join("/")} (line ${s.symbol.line + 1})`);
  throw new ToolbeltError(
    "EMULTI_MATCH",
    `${namePath} names ${found.length} symbols in ${rel}: ${list.join(", ")}; give a longer name path or a line`,
    {
      details: { symbol: namePath },
    },
  );
}
