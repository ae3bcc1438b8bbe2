/// <reference lib="dom" />
// Draws a present_ui tree. Every string goes in as a text node (never as markup); links are
// checked by safeHref; a component outside the vocabulary becomes a placeholder row.
import { type ComponentChild, type ComponentChildren, h } from "preact";
import { safeHref } from "./links.js";
import type { Json } from "./model.js";

const MAX_DEPTH = 16;

type Node = { component: string; props: Json; children: unknown[] };

function isRecord(value: unknown): value is Json {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function normalise(raw: unknown): Node | undefined {
  if (!isRecord(raw)) return undefined;
  const props: Json = { ...raw, ...(isRecord(raw.props) ? raw.props : {}) };
  const component = [raw.type, raw.component, raw.kind].find((v) => typeof v === "string") as
    | string
    | undefined;
  const children = Array.isArray(raw.children)
    ? raw.children
    : Array.isArray(props.children)
      ? props.children
      : [];
  return { component: component ?? "", props, children };
}

function text(value: unknown): string {
  if (value === undefined || value === null) return "";
  if (typeof value === "string") return value;
  if (typeof value === "number" || typeof value === "boolean") return String(value);
  return JSON.stringify(value);
}

function firstText(props: Json, ...keys: string[]): string {
  for (const key of keys) if (props[key] !== undefined && props[key] !== null) return text(props[key]);
  return "";
}

function kids(node: Node, depth: number): ComponentChild[] {
  return node.children.map((child, i) => h(PanelNode, { key: i, node: child, depth: depth + 1 }));
}

function tableRows(props: Json): { columns: string[]; rows: string[][] } {
  const rawColumns = props.columns ?? props.headers ?? props.header;
  let columns = Array.isArray(rawColumns)
    ? rawColumns.map((c) => (isRecord(c) ? firstText(c, "label", "title", "key", "name") : text(c)))
    : [];
  const columnKeys = Array.isArray(rawColumns)
    ? rawColumns.map((c, i) => (isRecord(c) ? firstText(c, "key", "name", "label") : (columns[i] ?? "")))
    : [];
  const rawRows = Array.isArray(props.rows) ? props.rows : Array.isArray(props.data) ? props.data : [];
  if (columns.length === 0 && isRecord(rawRows[0])) {
    columns = Object.keys(rawRows[0]);
    columnKeys.push(...columns);
  }
  const rows = rawRows.map((row) => {
    if (Array.isArray(row)) return row.map(text);
    if (isRecord(row)) {
      const cells = Array.isArray(row.cells) ? row.cells : undefined;
      return cells ? cells.map(text) : columnKeys.map((k) => text(row[k]));
    }
    return [text(row)];
  });
  return { columns, rows };
}

function definitions(props: Json): Array<[string, string]> {
  const raw = props.items ?? props.entries ?? props.definitions ?? props.terms;
  if (Array.isArray(raw)) {
    return raw.map((item) =>
      isRecord(item)
        ? [
            firstText(item, "term", "label", "key", "name", "title"),
            firstText(item, "value", "definition", "description", "text"),
          ]
        : Array.isArray(item)
          ? [text(item[0]), text(item[1])]
          : [text(item), ""],
    );
  }
  if (isRecord(raw)) return Object.entries(raw).map(([k, v]) => [k, text(v)]);
  return [];
}

function listItems(node: Node, depth: number): ComponentChildren[] {
  const raw = Array.isArray(node.props.items) ? node.props.items : node.children;
  return raw.map((item) => {
    const child = normalise(item);
    return child?.component
      ? h(PanelNode, { node: item, depth: depth + 1 })
      : text(isRecord(item) ? (item.text ?? item.label ?? item) : item);
  });
}

const TONES = new Set(["neutral", "info", "success", "warning", "danger", "error"]);

function renderNode(node: Node, depth: number): ComponentChild {
  const p = node.props;
  switch (node.component) {
    case "Card":
      return h(
        "section",
        { class: "ui-card", "data-component": "Card" },
        firstText(p, "title") ? h("h4", { class: "ui-card-title" }, firstText(p, "title")) : null,
        firstText(p, "subtitle", "description")
          ? h("p", { class: "ui-muted" }, firstText(p, "subtitle", "description"))
          : null,
        ...kids(node, depth),
      );
    case "Stack": {
      const direction = firstText(p, "direction", "orientation", "layout");
      const row = /^(row|horizontal|h)$/i.test(direction);
      return h(
        "div",
        { class: `ui-stack ${row ? "ui-row" : "ui-column"}`, "data-component": "Stack" },
        ...kids(node, depth),
      );
    }
    case "Heading": {
      const level = Math.min(Math.max(Number(p.level) || 2, 1), 4);
      return h(
        `h${level + 2}`,
        { class: "ui-heading", "data-component": "Heading" },
        firstText(p, "text", "title", "content", "value"),
      );
    }
    case "Paragraph":
      return h(
        "p",
        { class: "ui-paragraph", "data-component": "Paragraph" },
        firstText(p, "text", "content", "value"),
      );
    case "List": {
      const ordered = p.ordered === true || p.style === "ordered" || p.style === "numbered";
      return h(
        ordered ? "ol" : "ul",
        { class: "ui-list", "data-component": "List" },
        ...listItems(node, depth).map((item, i) => h("li", { key: i }, item)),
      );
    }
    case "Table": {
      const { columns, rows } = tableRows(p);
      return h(
        "div",
        { class: "ui-table-wrap", "data-component": "Table" },
        h(
          "table",
          { class: "ui-table" },
          firstText(p, "caption", "title") ? h("caption", null, firstText(p, "caption", "title")) : null,
          columns.length
            ? h("thead", null, h("tr", null, ...columns.map((c, i) => h("th", { key: i }, c))))
            : null,
          h(
            "tbody",
            null,
            ...rows.map((row, r) => h("tr", { key: r }, ...row.map((cell, c) => h("td", { key: c }, cell)))),
          ),
        ),
      );
    }
    case "DefinitionList":
      return h(
        "dl",
        { class: "ui-dl", "data-component": "DefinitionList" },
        ...definitions(p).flatMap(([term, value], i) => [
          h("dt", { key: `t${i}` }, term),
          h("dd", { key: `d${i}` }, value),
        ]),
      );
    case "Code":
      return h(
        "figure",
        { class: "ui-code", "data-component": "Code" },
        firstText(p, "title", "filename", "language", "lang")
          ? h("figcaption", null, firstText(p, "title", "filename", "language", "lang"))
          : null,
        h("pre", null, h("code", null, firstText(p, "code", "text", "content", "value", "source"))),
      );
    case "Link": {
      const raw = p.href ?? p.url;
      const label = firstText(p, "text", "label", "title") || text(raw);
      const href = safeHref(raw);
      if (!href)
        return h(
          "span",
          {
            class: "ui-link-blocked",
            "data-component": "Link",
            title: "link not allowed: only http, https and mailto",
          },
          label,
        );
      return h(
        "a",
        {
          class: "ui-link",
          "data-component": "Link",
          href,
          target: "_blank",
          rel: "noopener noreferrer nofollow",
        },
        label,
      );
    }
    case "Badge": {
      const tone = firstText(p, "tone", "variant", "color", "status").toLowerCase();
      return h(
        "span",
        { class: `ui-badge ${TONES.has(tone) ? `tone-${tone}` : ""}`, "data-component": "Badge" },
        firstText(p, "text", "label", "value"),
      );
    }
    case "Progress": {
      const max = Number(p.max) > 0 ? Number(p.max) : 100;
      const raw = Number(p.value ?? p.percent ?? p.progress);
      const value = Number.isFinite(raw) ? Math.min(Math.max(raw, 0), max) : 0;
      const label = firstText(p, "label", "text", "title");
      return h(
        "div",
        { class: "ui-progress", "data-component": "Progress" },
        label ? h("span", { class: "ui-progress-label" }, label) : null,
        h("progress", { value, max }),
        h("span", { class: "ui-muted" }, `${Math.round((value / max) * 100)}%`),
      );
    }
    default:
      return h(
        "div",
        { class: "ui-unknown", "data-component": "unknown" },
        `Unsupported component${node.component ? `: ${node.component}` : ""}`,
      );
  }
}

export function PanelNode(props: { node: unknown; depth: number }): ComponentChild {
  const node = normalise(props.node);
  if (!node) {
    if (typeof props.node === "string") return h("p", { class: "ui-paragraph" }, props.node);
    return h("div", { class: "ui-unknown", "data-component": "unknown" }, "Unsupported component");
  }
  if (props.depth > MAX_DEPTH) return h("div", { class: "ui-unknown" }, "(nested too deep to draw)");
  return renderNode(node, props.depth);
}

/** A whole present_ui tree; a tree given as a list of nodes is drawn as a stack. */
export function PanelTree(props: { tree: unknown }): ComponentChild {
  if (Array.isArray(props.tree)) {
    return h(
      "div",
      { class: "ui-stack ui-column" },
      ...props.tree.map((node, i) => h(PanelNode, { key: i, node, depth: 0 })),
    );
  }
  const root = isRecord(props.tree) && isRecord(props.tree.root) ? props.tree.root : props.tree;
  return h(PanelNode, { node: root, depth: 0 });
}
