/**
 * The generative-UI vocabulary: eleven components composed as a tree of plain fields. Validation
 * refuses (never trims) anything over a limit and names the path of the offending node.
 */

export const COMPONENTS = [
  "Card",
  "Stack",
  "Heading",
  "Paragraph",
  "List",
  "Table",
  "DefinitionList",
  "Code",
  "Link",
  "Badge",
  "Progress",
] as const;
export type ComponentName = (typeof COMPONENTS)[number];

export const UI_LIMITS = {
  nodes: 200,
  depth: 8,
  serialisedChars: 200_000,
  codeChars: 20_000,
  paragraphChars: 2_000,
  cellChars: 500,
  /** Headings, list items, badges, labels: short fields that are not in the issue's list. */
  shortTextChars: 2_000,
} as const;

export type Cell = string | number | boolean | null;

export type UiNode =
  | { component: "Card"; id?: string; title?: string; subtitle?: string; children?: UiNode[] }
  | { component: "Stack"; id?: string; direction?: "vertical" | "horizontal"; children?: UiNode[] }
  | { component: "Heading"; text: string; level?: 1 | 2 | 3 }
  | { component: "Paragraph"; text: string }
  | { component: "List"; items: string[]; ordered?: boolean }
  | { component: "Table"; columns: string[]; rows: Cell[][] }
  | { component: "DefinitionList"; items: Array<{ term: string; value: string }> }
  | { component: "Code"; code: string; language?: string; title?: string }
  | { component: "Link"; url: string; text?: string }
  | { component: "Badge"; text: string; tone?: "neutral" | "info" | "success" | "warning" | "danger" }
  | { component: "Progress"; value: number; max?: number; label?: string }
  /** A component outside the vocabulary, kept by name only and drawn as a placeholder row. */
  | { component: string; unknown: true };

export type ContainerNode = Extract<UiNode, { component: "Card" | "Stack" }>;

export class UiValidationError extends Error {
  constructor(
    readonly path: string,
    message: string,
  ) {
    super(`${path}: ${message}`);
  }
}

const ID = /^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$/;
const TONES = ["neutral", "info", "success", "warning", "danger"];

type Fields = Record<string, unknown>;

function fail(path: string, message: string): never {
  throw new UiValidationError(path, message);
}

function onlyFields(node: Fields, path: string, allowed: string[]): void {
  for (const key of Object.keys(node)) {
    if (key !== "component" && !allowed.includes(key))
      fail(
        path,
        `unknown field ${JSON.stringify(key)} for ${String(node.component)} (fields: ${allowed.join(", ")})`,
      );
  }
}

function text(node: Fields, key: string, path: string, max: number, required: boolean): string | undefined {
  const value = node[key];
  if (value === undefined) {
    if (required) fail(path, `${String(node.component)} needs ${key}`);
    return undefined;
  }
  if (typeof value !== "string") fail(`${path}.${key}`, "must be a string");
  if (value.length > max) fail(`${path}.${key}`, `${value.length} characters, the limit is ${max}`);
  return value;
}

function oneOf<T extends string>(
  node: Fields,
  key: string,
  path: string,
  values: readonly T[],
): T | undefined {
  const value = node[key];
  if (value === undefined) return undefined;
  if (!values.includes(value as T)) fail(`${path}.${key}`, `must be one of ${values.join(", ")}`);
  return value as T;
}

function flag(node: Fields, key: string, path: string): boolean | undefined {
  const value = node[key];
  if (value === undefined) return undefined;
  if (typeof value !== "boolean") fail(`${path}.${key}`, "must be true or false");
  return value;
}

function stringArray(node: Fields, key: string, path: string, max: number): string[] {
  const value = node[key];
  if (!Array.isArray(value)) fail(`${path}.${key}`, "must be an array of strings");
  return value.map((item, i) => {
    if (typeof item !== "string") fail(`${path}.${key}[${i}]`, "must be a string");
    if (item.length > max) fail(`${path}.${key}[${i}]`, `${item.length} characters, the limit is ${max}`);
    return item;
  });
}

function safeUrl(value: string, path: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    fail(path, `not an absolute URL: ${JSON.stringify(value.slice(0, 100))}`);
  }
  if (!["http:", "https:", "mailto:"].includes(url.protocol))
    fail(path, `links may only use http, https or mailto, not ${url.protocol.replace(/:$/, "")}`);
  return value;
}

/**
 * Validates a tree and returns a normalised copy (fields in a fixed order, unknown components reduced
 * to their name). Throws UiValidationError with the offending node's path.
 */
export function validateTree(input: unknown, path = "tree"): UiNode {
  let count = 0;
  const visit = (raw: unknown, at: string, depth: number): UiNode => {
    if (depth > UI_LIMITS.depth) fail(at, `nesting deeper than ${UI_LIMITS.depth} levels`);
    count += 1;
    if (count > UI_LIMITS.nodes) fail(at, `more than ${UI_LIMITS.nodes} nodes`);
    if (typeof raw !== "object" || raw === null || Array.isArray(raw)) fail(at, "a node must be an object");
    const node = raw as Fields;
    if (typeof node.component !== "string" || node.component === "")
      fail(at, `a node needs "component", one of ${COMPONENTS.join(", ")}`);
    const short = UI_LIMITS.shortTextChars;
    switch (node.component as ComponentName) {
      case "Card":
      case "Stack": {
        const isCard = node.component === "Card";
        onlyFields(
          node,
          at,
          isCard ? ["id", "title", "subtitle", "children"] : ["id", "direction", "children"],
        );
        const id = text(node, "id", at, 64, false);
        if (id !== undefined && !ID.test(id))
          fail(`${at}.id`, "letters, digits, _ . : - (max 64), starting with a letter or digit");
        const kids = node.children;
        if (kids !== undefined && !Array.isArray(kids)) fail(`${at}.children`, "must be an array of nodes");
        const children = (kids ?? []).map((child, i) => visit(child, `${at}.children[${i}]`, depth + 1));
        if (isCard) {
          const title = text(node, "title", at, short, false);
          const subtitle = text(node, "subtitle", at, short, false);
          return {
            component: "Card",
            ...(id !== undefined ? { id } : {}),
            ...(title !== undefined ? { title } : {}),
            ...(subtitle !== undefined ? { subtitle } : {}),
            children,
          };
        }
        const direction = oneOf(node, "direction", at, ["vertical", "horizontal"] as const);
        return {
          component: "Stack",
          ...(id !== undefined ? { id } : {}),
          ...(direction !== undefined ? { direction } : {}),
          children,
        };
      }
      case "Heading": {
        onlyFields(node, at, ["text", "level"]);
        const level = node.level;
        if (level !== undefined && level !== 1 && level !== 2 && level !== 3)
          fail(`${at}.level`, "must be 1, 2 or 3");
        return {
          component: "Heading",
          text: text(node, "text", at, short, true) as string,
          ...(level ? { level } : {}),
        };
      }
      case "Paragraph":
        onlyFields(node, at, ["text"]);
        return {
          component: "Paragraph",
          text: text(node, "text", at, UI_LIMITS.paragraphChars, true) as string,
        };
      case "List": {
        onlyFields(node, at, ["items", "ordered"]);
        const ordered = flag(node, "ordered", at);
        return {
          component: "List",
          items: stringArray(node, "items", at, short),
          ...(ordered !== undefined ? { ordered } : {}),
        };
      }
      case "Table": {
        onlyFields(node, at, ["columns", "rows"]);
        const columns = stringArray(node, "columns", at, UI_LIMITS.cellChars);
        if (!Array.isArray(node.rows)) fail(`${at}.rows`, "must be an array of rows");
        const rows = (node.rows as unknown[]).map((row, r) => {
          if (!Array.isArray(row)) fail(`${at}.rows[${r}]`, "a row must be an array of cells");
          if (row.length !== columns.length)
            fail(`${at}.rows[${r}]`, `${row.length} cells for ${columns.length} columns`);
          return row.map((cell, c) => {
            const where = `${at}.rows[${r}][${c}]`;
            if (cell !== null && !["string", "number", "boolean"].includes(typeof cell))
              fail(where, "a cell is a string, number, boolean or null");
            if (String(cell).length > UI_LIMITS.cellChars)
              fail(where, `${String(cell).length} characters, the limit is ${UI_LIMITS.cellChars}`);
            return cell as Cell;
          });
        });
        return { component: "Table", columns, rows };
      }
      case "DefinitionList": {
        onlyFields(node, at, ["items"]);
        if (!Array.isArray(node.items)) fail(`${at}.items`, "must be an array of {term, value}");
        const items = (node.items as unknown[]).map((item, i) => {
          const where = `${at}.items[${i}]`;
          if (typeof item !== "object" || item === null) fail(where, "must be {term, value}");
          const entry = item as Fields;
          for (const key of Object.keys(entry))
            if (key !== "term" && key !== "value") fail(where, `unknown field ${JSON.stringify(key)}`);
          return {
            term: text({ ...entry, component: "item" }, "term", where, UI_LIMITS.cellChars, true) as string,
            value: text({ ...entry, component: "item" }, "value", where, UI_LIMITS.cellChars, true) as string,
          };
        });
        return { component: "DefinitionList", items };
      }
      case "Code": {
        onlyFields(node, at, ["code", "language", "title"]);
        const language = text(node, "language", at, 40, false);
        const title = text(node, "title", at, short, false);
        return {
          component: "Code",
          code: text(node, "code", at, UI_LIMITS.codeChars, true) as string,
          ...(language !== undefined ? { language } : {}),
          ...(title !== undefined ? { title } : {}),
        };
      }
      case "Link": {
        onlyFields(node, at, ["url", "text"]);
        const url = safeUrl(text(node, "url", at, short, true) as string, `${at}.url`);
        const label = text(node, "text", at, short, false);
        return { component: "Link", url, ...(label !== undefined ? { text: label } : {}) };
      }
      case "Badge": {
        onlyFields(node, at, ["text", "tone"]);
        const tone = oneOf(
          node,
          "tone",
          at,
          TONES as Array<"neutral" | "info" | "success" | "warning" | "danger">,
        );
        return {
          component: "Badge",
          text: text(node, "text", at, 200, true) as string,
          ...(tone ? { tone } : {}),
        };
      }
      case "Progress": {
        onlyFields(node, at, ["value", "max", "label"]);
        const max = node.max ?? 100;
        if (typeof max !== "number" || !Number.isFinite(max) || max <= 0)
          fail(`${at}.max`, "must be a positive number");
        const value = node.value;
        if (typeof value !== "number" || !Number.isFinite(value) || value < 0 || value > max)
          fail(`${at}.value`, `must be a number from 0 to ${max}`);
        const label = text(node, "label", at, short, false);
        return {
          component: "Progress",
          value,
          ...(node.max !== undefined ? { max } : {}),
          ...(label !== undefined ? { label } : {}),
        };
      }
      default:
        return { component: (node.component as string).slice(0, 64), unknown: true };
    }
  };
  return visit(input, path, 1);
}

/** Refuses a whole tree over the node, depth or size limits; `path` names the offending node. */
export function checkTreeLimits(tree: UiNode, path = "tree"): void {
  let count = 0;
  const walk = (node: UiNode, at: string, depth: number): void => {
    if (depth > UI_LIMITS.depth) fail(at, `nesting deeper than ${UI_LIMITS.depth} levels`);
    count += 1;
    if (count > UI_LIMITS.nodes) fail(at, `more than ${UI_LIMITS.nodes} nodes`);
    if ("children" in node && node.children)
      node.children.forEach((child, i) => {
        walk(child, `${at}.children[${i}]`, depth + 1);
      });
  };
  walk(tree, path, 1);
  const size = JSON.stringify(tree).length;
  if (size > UI_LIMITS.serialisedChars)
    fail(path, `${size} serialised characters, the limit is ${UI_LIMITS.serialisedChars}`);
}

export function countNodes(tree: UiNode): number {
  return 1 + ("children" in tree && tree.children ? tree.children.reduce((n, c) => n + countNodes(c), 0) : 0);
}

function indent(lines: string[], prefix: string): string[] {
  return lines.map((line) => (line ? prefix + line : line));
}

function renderTable(columns: string[], rows: Cell[][]): string[] {
  const cells = [
    columns,
    ...rows.map((r) => r.map((c) => (c === null ? "" : String(c).replace(/\s+/g, " ")))),
  ];
  const widths = columns.map((_, i) => Math.max(...cells.map((r) => (r[i] ?? "").length)));
  const line = (r: string[]) => `| ${r.map((c, i) => c.padEnd(widths[i] ?? 0)).join(" | ")} |`;
  return [
    line(cells[0] ?? []),
    `|${widths.map((w) => "-".repeat(w + 2)).join("|")}|`,
    ...cells.slice(1).map(line),
  ];
}

/** The plain-text rendering of a tree: what a terminal shows and what the model reads back. */
export function renderTreeText(tree: UiNode): string {
  const render = (node: UiNode): string[] => {
    if ("unknown" in node) return [`[unsupported component: ${node.component}]`];
    switch (node.component) {
      case "Card": {
        const head = [node.title, node.subtitle].filter(Boolean).join(" — ");
        const body = indent((node.children ?? []).flatMap(render), "  ");
        return [`[${head || "card"}]`, ...body];
      }
      case "Stack": {
        const parts = (node.children ?? []).map(render);
        if (node.direction === "horizontal" && parts.every((p) => p.length === 1))
          return [parts.map((p) => p[0]).join("  ")];
        return parts.flat();
      }
      case "Heading": {
        const rule = node.level === 3 ? "" : (node.level ?? 1) === 1 ? "=" : "-";
        return rule ? [node.text, rule.repeat(Math.min(node.text.length, 80))] : [`${node.text}:`];
      }
      case "Paragraph":
        return node.text.split("\n");
      case "List":
        return node.items.map((item, i) => `${node.ordered ? `${i + 1}.` : "-"} ${item}`);
      case "Table":
        return renderTable(node.columns, node.rows);
      case "DefinitionList": {
        const width = Math.min(30, Math.max(0, ...node.items.map((i) => i.term.length)));
        return node.items.map((i) => `${i.term.padEnd(width)} : ${i.value}`);
      }
      case "Code":
        return [
          ...(node.title ? [`${node.title}:`] : []),
          `\`\`\`${node.language ?? ""}`,
          ...node.code.split("\n"),
          "```",
        ];
      case "Link":
        return [node.text ? `${node.text} <${node.url}>` : `<${node.url}>`];
      case "Badge":
        return [`[${node.tone && node.tone !== "neutral" ? `${node.tone}: ` : ""}${node.text}]`];
      case "Progress": {
        const max = node.max ?? 100;
        const share = max > 0 ? node.value / max : 0;
        const filled = Math.round(share * 20);
        const bar = `[${"#".repeat(filled)}${"-".repeat(20 - filled)}] ${Math.round(share * 100)}%`;
        return [node.label ? `${node.label} ${bar}` : bar];
      }
      default:
        return [];
    }
  };
  return render(tree).join("\n");
}
