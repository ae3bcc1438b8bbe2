import {
  defineTool,
  renderText,
  renderTree,
  ToolbeltError,
  type ToolContext,
  type WriteDiagnostics,
  writeDiagnosticsHeader,
  writeDiagnosticsLines,
  writeDiagnosticsSchema,
  z,
} from "@toolbelt/core";
import { decide, isProtectedPath } from "@toolbelt/core/internal";
import type { TextEdit, WorkspaceEdit } from "vscode-languageserver-protocol";
import { type LspFamilyOptions, managerOf, requireSupport } from "../manager.js";
import { readProjectFile } from "../project-files.js";
import { resolveTarget, targetFields, targetLabel } from "../target.js";
import { toUri } from "../uri.js";
import { applyTextEdits, changedLines, editsByFile, type RefusedChange } from "../workspace-edit.js";

const renamePayload = z.object({
  kind: z.literal("lsp_rename"),
  target: z.string(),
  server: z.string(),
  new_name: z.string(),
  applied: z.boolean(),
  files: z.array(
    z.object({
      path: z.string(),
      edits: z.number().int(),
      lines: z.array(z.object({ line: z.number().int(), text: z.string() })),
      diagnostics: writeDiagnosticsSchema
        .optional()
        .describe("new problems the applied rename introduced into the file, when the server checked it"),
    }),
  ),
  edit_count: z.number().int(),
  // Passed through as the server sent it: declared as an object, not re-validated field by field.
  workspace_edit: z
    .custom<WorkspaceEdit>((value) => typeof value === "object" && value !== null)
    .meta({
      type: "object",
      description: "the LSP WorkspaceEdit as the server sent it, for a client that applies it itself",
    }),
  notes: z.array(z.string()).optional(),
});

type RenamePayload = z.output<typeof renamePayload>;

/** One file of a rename, checked and computed before anything is written. */
export type PlannedFile = {
  abs: string;
  rel: string;
  before: string;
  after: string;
  edits: number;
  lines: number[];
};

const MAX_PREVIEW_LINES = 50;

function refusal(code: "EPATH_ESCAPE" | "EUNAVAILABLE", refused: RefusedChange[]): ToolbeltError {
  const list = refused.map((r) => `${r.target} (${r.why})`).join("; ");
  return new ToolbeltError(code, `the server's rename edit is refused, nothing was changed: ${list}`, {
    details: { refused },
  });
}

/**
 * Checks every file of a rename against what a write of it would face — root, protected paths,
 * the allowlists of the tool and family, the write size limit — so a rename is refused whole
 * before anything is written rather than failing halfway.
 */
export function checkPlan(ctx: ToolContext, planned: PlannedFile[]): void {
  const protectedFiles = planned.filter((p) => isProtectedPath(p.rel)).map((p) => p.rel);
  if (protectedFiles.length)
    throw new ToolbeltError(
      "EDENIED",
      `the rename would edit ${protectedFiles.join(", ")}, which decide policy or run code; lsp_rename never writes them, nothing was changed`,
      { details: { paths: protectedFiles } },
    );
  const decision = decide(
    {
      tool: "lsp_rename",
      calledAs: ctx.calledAs,
      family: "lsp",
      access: "write",
      paths: planned.map((p) => p.rel),
    },
    ctx.config,
    ctx.session.allow,
  );
  if (decision.mode === "deny")
    throw new ToolbeltError("EDENIED", `lsp_rename: ${decision.reason}; nothing was changed`, {
      details: { source: decision.source },
    });
  const max = ctx.limits.fileWriteMaxBytes;
  for (const p of planned) {
    const bytes = Buffer.byteLength(p.after, "utf8");
    if (bytes > max)
      throw new ToolbeltError(
        "ETOO_LARGE",
        `the rename would make ${p.rel} ${bytes} bytes, over limits.fileWriteMaxBytes (${max}); nothing was changed`,
        { details: { path: p.rel, bytes, limit: max } },
      );
  }
}

export function renameTool(opts: LspFamilyOptions) {
  return defineTool({
    name: "lsp_rename",
    family: "lsp",
    access: "write",
    deferrable: true,
    description:
      "Rename a symbol everywhere it is used, as the language server computes it. Returns the edit per file; with apply: true writes every file atomically (all validated first — inside the root, allowed, within the size limit, unchanged — and nothing is written if any file fails).",
    input: z.object({
      ...targetFields,
      new_name: z.string().min(1).describe("The new name."),
      apply: z.boolean().optional().describe("Write the edits (default false: only show them)."),
    }),
    output: renamePayload,
    paths: (input) => [input.path],
    async execute(input, ctx): Promise<RenamePayload> {
      const target = await resolveTarget(input, ctx, opts);
      const backend = target.backend;
      requireSupport(backend, "textDocument/rename");
      const edit = await backend.request<WorkspaceEdit | null>(
        "textDocument/rename",
        { textDocument: { uri: toUri(target.abs) }, position: target.position, newName: input.new_name },
        { signal: ctx.signal },
      );
      const { files: byFile, refused } = editsByFile(edit);
      // Each target goes through the session's resolver (symlinks included), whatever URI the server
      // wrote; two URIs naming one file (a link and its target) become one entry, so the file is
      // locked and written once.
      const byReal = new Map<string, { edits: TextEdit[]; abs: string; rel: string; exists: boolean }>();
      const outside: RefusedChange[] = [];
      for (const file of byFile) {
        let r: ReturnType<ToolContext["resolve"]>;
        try {
          r = ctx.resolve(file.abs);
        } catch (error) {
          if (!ToolbeltError.isInstance(error) || error.code !== "EPATH_ESCAPE") throw error;
          outside.push({ target: file.abs, why: "outside the project root" });
          continue;
        }
        const entry = byReal.get(r.abs) ?? { edits: [], abs: r.abs, rel: r.rel, exists: r.exists };
        entry.edits.push(...file.edits);
        byReal.set(r.abs, entry);
      }
      const resolved = [...byReal.values()];
      if (outside.length) throw refusal("EPATH_ESCAPE", [...outside, ...refused]);
      if (refused.length) throw refusal("EUNAVAILABLE", refused);
      if (!edit || byFile.length === 0)
        throw new ToolbeltError("ENO_MATCH", `nothing to rename at ${targetLabel(target)}`);
      const planned: PlannedFile[] = [];
      for (const { edits, abs, rel, exists } of resolved) {
        if (!exists)
          throw new ToolbeltError("ENOENT", `the rename edits a missing file: ${rel}; nothing was changed`);
        const before =
          backend.text(abs) ??
          (await readProjectFile((p) => ctx.openFile(p), abs, rel, ctx.limits.fileMaxBytes)).text;
        planned.push({
          abs,
          rel,
          before,
          after: applyTextEdits(before, edits, rel),
          edits: edits.length,
          lines: changedLines(edits),
        });
      }
      planned.sort((a, b) => (a.rel < b.rel ? -1 : 1));
      checkPlan(ctx, planned);
      const payload: RenamePayload = {
        kind: "lsp_rename",
        target: targetLabel(target),
        server: backend.label,
        new_name: input.new_name,
        applied: false,
        files: planned.map((p) => {
          const newLines = p.after.split(/\r?\n/);
          return {
            path: p.rel,
            edits: p.edits,
            lines: p.lines
              .slice(0, MAX_PREVIEW_LINES)
              .map((line) => ({ line, text: (newLines[line - 1] ?? "").trim() })),
          };
        }),
        edit_count: planned.reduce((n, p) => n + p.edits, 0),
        workspace_edit: edit,
      };
      if (!input.apply) return payload;
      const applied = await applyAll(ctx, planned);
      if (applied.notes.length) payload.notes = applied.notes;
      for (const file of payload.files) {
        const diagnostics = applied.diagnostics.get(file.path);
        if (diagnostics) file.diagnostics = diagnostics;
      }
      payload.applied = true;
      const manager = managerOf(ctx.session, opts);
      await manager.filesChanged(
        ctx.root,
        planned.map((p) => p.abs),
      );
      await backend.syncOpen();
      return payload;
    },
    render: (p) => {
      const checked = p.files.flatMap((f) => {
        const header = f.diagnostics && writeDiagnosticsHeader(f.diagnostics);
        return header ? [{ f, header, d: f.diagnostics as WriteDiagnostics }] : [];
      });
      return renderText(
        [
          ["Kind", p.kind],
          ["Target", p.target],
          ["Server", p.server],
          ["New-Name", p.new_name],
          ["Applied", p.applied ? "yes" : "no (preview; call again with apply: true to write)"],
          ["Files", p.files.length],
          ["Edits", p.edit_count],
          ["Diagnostics", checked.map((c) => `${c.f.path}: ${c.header}`).join("; ") || undefined],
        ],
        [
          renderTree(
            p.files.map((f) => ({
              path: f.path,
              matches: f.lines.map((l) => ({ line: l.line, text: l.text })),
            })),
          ),
          ...checked.map((c) => writeDiagnosticsLines(c.f.path, c.d).join("\n")),
          ...(p.notes ?? []),
        ]
          .filter(Boolean)
          .join("\n"),
      );
    },
  });
}

/**
 * Writes every planned file through the session's write path, under the files' locks (taken in
 * path order, so two renames cannot deadlock), after checking none changed on disk, as one core
 * transaction: a write the session refuses (or that fails) leaves every file as it was.
 */
export async function applyAll(
  ctx: ToolContext,
  planned: Array<Pick<PlannedFile, "abs" | "rel" | "before" | "after">>,
): Promise<{ notes: string[]; diagnostics: Map<string, WriteDiagnostics> }> {
  const notes: string[] = [];
  const diagnostics = new Map<string, WriteDiagnostics>();
  const locked = async (index: number): Promise<void> => {
    if (index < planned.length) {
      await ctx.withFileLock((planned[index] as (typeof planned)[number]).abs, () => locked(index + 1));
      return;
    }
    for (const p of planned) {
      const now = (await readProjectFile((f) => ctx.openFile(f), p.abs, p.rel, ctx.limits.fileMaxBytes)).text;
      if (now !== p.before)
        throw new ToolbeltError(
          "ECONFLICT",
          `${p.rel} changed since the server computed the rename; nothing was changed, try again`,
        );
    }
    // One core transaction: every file checked first, the checkpoint recorded, a failed write undone.
    const results = await ctx.writeFiles(planned.map((p) => ({ abs: p.abs, data: p.after })));
    for (const r of results) {
      notes.push(...r.notes);
      if (r.diagnostics) diagnostics.set(r.path, r.diagnostics);
    }
  };
  await locked(0);
  return { notes, diagnostics };
}
