// Builds the docs site into docs/site: the hand-written pages in docs/*.md, each package's README,
// and a tool reference generated from the tools' own schemas (so it cannot drift). Then checks every
// link: a broken relative link or anchor fails the build.
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import {
  eventJsonSchema,
  FAMILY_NAMES,
  inputJsonSchema,
  loadFamilies,
  outputJsonSchema,
} from "@toolbelt/toolbelt";
import { Marked } from "marked";

const DOCS = path.dirname(fileURLToPath(import.meta.url));
const REPO = path.dirname(DOCS);
const SITE = path.join(DOCS, "site");

const slug = (text) =>
  text
    .toLowerCase()
    .replace(/<[^>]+>/g, "")
    .replace(/[^a-z0-9 _-]/g, "")
    .trim()
    .replace(/\s+/g, "-");

// ---------- generated pages ----------

function schemaType(schema) {
  if (!schema || typeof schema !== "object") return "any";
  if (schema.enum) return schema.enum.map((v) => JSON.stringify(v)).join(" \\| ");
  if (schema.anyOf) return schema.anyOf.map(schemaType).join(" \\| ");
  if (schema.type === "array") return `${schemaType(schema.items)}[]`;
  return Array.isArray(schema.type) ? schema.type.join(" \\| ") : (schema.type ?? "any");
}

function cell(text) {
  return String(text ?? "")
    .replace(/\|/g, "\\|")
    .replace(/\n/g, " ");
}

async function toolReference() {
  const families = await loadFamilies(FAMILY_NAMES);
  const out = [
    "# Tool reference",
    "",
    "Generated from the tools' zod schemas by `docs/build.mjs` at build time: it cannot drift from the code.",
    "Each tool lists its family, access (which drives the permission policy), when it is bound, its names",
    "in other profiles, its parameters and the kinds of result it returns (MCP clients get the whole",
    "result schema as the tool's `outputSchema`; every tool may also return `error`).",
    "",
  ];
  for (const family of families) {
    const tools = family.tools ?? [];
    if (tools.length === 0) continue;
    out.push(`## ${family.name}`, "");
    for (const tool of tools) {
      out.push(`### ${tool.name}`, "", tool.description, "");
      const facts = [`family \`${tool.family}\``, `access \`${tool.access}\``];
      if (tool.deferrable) facts.push("deferrable (behind tool_search when tool search is on)");
      if (tool.editBackend)
        facts.push(`edit backend \`${tool.editBackend}\` (one edit tool is bound per session)`);
      const req = tool.requires ?? {};
      if (req.capability) facts.push(`needs client capability \`${req.capability}\``);
      if (req.rootAgentOnly) facts.push("root agent only");
      if (req.actModeOnly) facts.push("act mode only");
      if (req.autoWorkspaceOnly) facts.push("auto workspace mode only");
      out.push(facts.join(" · "), "");
      const variants = Object.entries(tool.profiles ?? {});
      if (variants.length) {
        out.push(
          `Profiles: ${variants.map(([profile, v]) => (v ? `\`${profile}\`: \`${v.name}\`` : `\`${profile}\`: not bound`)).join(", ")}`,
          "",
        );
      }
      const schema = tool.jsonSchema ?? inputJsonSchema(tool.input);
      const props = Object.entries(schema.properties ?? {});
      if (props.length) {
        const required = new Set(schema.required ?? []);
        out.push("| parameter | type | required | description |", "|---|---|---|---|");
        for (const [name, prop] of props) {
          out.push(
            `| \`${name}\` | ${cell(schemaType(prop))} | ${required.has(name) ? "yes" : "no"} | ${cell(prop.description)} |`,
          );
        }
        out.push("");
      } else {
        out.push("No parameters.", "");
      }
      const kinds = outputJsonSchema(tool).properties.kind.enum?.filter((k) => k !== "error");
      out.push(
        `Returns: ${kinds ? kinds.map((k) => `\`${k}\``).join(", ") : "a payload with a `kind`"}, or \`error\`.`,
        "",
      );
      for (const [profile, v] of variants) {
        if (!v?.input) continue;
        const vs = inputJsonSchema(v.input);
        const vprops = Object.keys(vs.properties ?? {});
        out.push(
          `In \`${profile}\` as \`${v.name}\`: parameters ${vprops.map((p) => `\`${p}\``).join(", ") || "none"}.`,
          "",
        );
      }
    }
  }
  return out.join("\n");
}

function eventsReference() {
  return [
    "# Event schema (generated)",
    "",
    "The JSON Schema of every event, generated from core's zod schema. Each event carries `v` (schema",
    "version), `seq`, `session` and `at`. See [events](events.md) for what each one means.",
    "",
    "```json",
    JSON.stringify(eventJsonSchema(), null, 2),
    "```",
    "",
  ].join("\n");
}

// ---------- rendering ----------

function collectPages() {
  const pages = [];
  for (const file of readdirSync(DOCS)) {
    if (file.endsWith(".md")) pages.push({ out: file.replace(/\.md$/, ".html"), src: path.join(DOCS, file) });
  }
  for (const dir of ["packages", "plugins", "examples"]) {
    const base = path.join(REPO, dir);
    if (!existsSync(base)) continue;
    for (const name of readdirSync(base)) {
      const readme = path.join(base, name, "README.md");
      if (existsSync(readme)) pages.push({ out: `${dir}/${name}.html`, src: readme });
    }
  }
  return pages;
}

function layout(title, body, depth, nav) {
  const up = "../".repeat(depth);
  const links = nav.map(([href, label]) => `<a href="${up}${href}">${label}</a>`).join("\n");
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title} · toolbelt</title>
<style>
body{font:16px/1.55 system-ui,sans-serif;margin:0;display:flex;color:#1d2330}
nav{width:15rem;padding:1rem;background:#f3f4f7;min-height:100vh;box-sizing:border-box}
nav a{display:block;padding:.2rem 0;color:#2948a3;text-decoration:none}
main{padding:1rem 2rem;max-width:52rem;overflow-x:auto}
code,pre{font:14px ui-monospace,monospace;background:#f3f4f7}
pre{padding:.8rem;overflow-x:auto}
table{border-collapse:collapse}td,th{border:1px solid #d6d9e0;padding:.25rem .5rem;vertical-align:top}
img{max-width:100%}
</style></head>
<body><nav><strong>toolbelt</strong>
${links}
</nav><main>
${body}
</main></body></html>
`;
}

const NAV = [
  ["index.html", "Getting started"],
  ["tools.html", "Tool reference"],
  ["configuration.html", "Configuration"],
  ["events.html", "Events"],
  ["profiles.html", "Profiles"],
  ["sandbox.html", "Sandbox"],
  ["hooks.html", "Hooks"],
  ["servers.html", "Servers"],
  ["plugin-authoring.html", "Plugin authoring"],
  ["checkpoints.html", "Checkpoints and undo"],
  ["ci-recipes.html", "CI recipes"],
  ["reliability.html", "Reliability"],
];

function render(pages) {
  const outputs = new Map();
  for (const page of pages) {
    const markdown = page.markdown ?? readFileSync(page.src, "utf8");
    const marked = new Marked();
    const ids = new Map();
    marked.use({
      renderer: {
        heading({ tokens, depth }) {
          const text = this.parser.parseInline(tokens);
          let id = slug(text);
          const n = ids.get(id) ?? 0;
          ids.set(id, n + 1);
          if (n) id = `${id}-${n}`;
          return `<h${depth} id="${id}">${text}</h${depth}>\n`;
        },
      },
      walkTokens(token) {
        if ((token.type === "link" || token.type === "image") && token.href) {
          token.href = rewriteHref(token.href, page);
        }
      },
    });
    const body = marked.parse(markdown);
    const title = /^#\s+(.+)$/m.exec(markdown)?.[1] ?? page.out;
    const depth = page.out.split("/").length - 1;
    outputs.set(page.out, { html: layout(title, body, depth, NAV), page });
  }
  return outputs;
}

/** Markdown links point at .md files or repository files; on the site they point at pages or the repo. */
function rewriteHref(href, page) {
  if (/^[a-z]+:/i.test(href) || href.startsWith("#")) return href;
  const [target, anchor] = href.split("#");
  if (!target) return href;
  const srcDir = page.src ? path.dirname(page.src) : DOCS;
  const abs = path.resolve(srcDir, target);
  const outDir = path.dirname(path.join(SITE, page.out));
  const siteFile = siteFileFor(abs);
  const resolved = siteFile ?? abs;
  const rel = path.relative(outDir, resolved).split(path.sep).join("/");
  return anchor ? `${rel}#${anchor}` : rel;
}

function siteFileFor(abs) {
  // Links to generated pages (tools.html, event-schema.html) are written as site paths already.
  if (path.dirname(abs) === DOCS && abs.endsWith(".html")) return path.join(SITE, path.basename(abs));
  if (abs.startsWith(DOCS + path.sep) && abs.endsWith(".md") && path.dirname(abs) === DOCS) {
    return path.join(SITE, path.basename(abs).replace(/\.md$/, ".html"));
  }
  for (const dir of ["packages", "plugins", "examples"]) {
    const m = new RegExp(`^${REPO}/${dir}/([^/]+)/(README\\.md)?$`).exec(abs.endsWith("/") ? abs : `${abs}/`);
    if (m || new RegExp(`^${REPO}/${dir}/([^/]+)/README\\.md$`).test(abs)) {
      const name = abs.slice(`${REPO}/${dir}/`.length).split("/")[0];
      if (existsSync(path.join(REPO, dir, name, "README.md"))) return path.join(SITE, dir, `${name}.html`);
    }
  }
  return undefined;
}

// ---------- link check ----------

function checkLinks(outputs) {
  const problems = [];
  let checked = 0;
  let external = 0;
  const idsOf = new Map();
  for (const [out, { html }] of outputs) {
    idsOf.set(path.join(SITE, out), new Set([...html.matchAll(/\sid="([^"]+)"/g)].map((m) => m[1])));
  }
  for (const [out, { html }] of outputs) {
    const from = path.join(SITE, out);
    for (const [, href] of html.matchAll(/\s(?:href|src)="([^"]*)"/g)) {
      checked++;
      if (/^(https?|mailto):/i.test(href)) {
        external++;
        continue;
      }
      const [target, anchor] = href.split("#");
      const file = target ? path.resolve(path.dirname(from), decodeURI(target)) : from;
      if (!idsOf.has(file) && !existsSync(file)) {
        problems.push(`${out}: broken link ${href}`);
        continue;
      }
      if (anchor && idsOf.has(file) && !idsOf.get(file).has(anchor))
        problems.push(`${out}: missing anchor ${href}`);
    }
  }
  return { problems, checked, external };
}

// ---------- main ----------

const generated = [
  { out: "tools.html", src: path.join(DOCS, "tools.generated.md"), markdown: await toolReference() },
  {
    out: "event-schema.html",
    src: path.join(DOCS, "event-schema.generated.md"),
    markdown: eventsReference(),
  },
];
rmSync(SITE, { recursive: true, force: true });
const outputs = render([...collectPages(), ...generated]);
for (const [out, { html }] of outputs) {
  const file = path.join(SITE, out);
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, html);
}
const { problems, checked, external } = checkLinks(outputs);
console.log(
  `docs: ${outputs.size} pages in ${path.relative(REPO, SITE)}; ${checked} links checked (${external} external, not fetched)`,
);
if (problems.length) {
  console.error(problems.join(os.EOL));
  process.exitCode = 1;
}
