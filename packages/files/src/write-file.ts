import {
  defineTool,
  renderText,
  ToolbeltError,
  writeDiagnosticsHeader,
  writeDiagnosticsLines,
  writeDiagnosticsSchema,
  z,
} from "@toolbelt/core";

export const fileWrittenPayload = z.object({
  kind: z.literal("file_written"),
  path: z.string(),
  result: z
    .enum(["created", "overwritten"])
    .describe("`created` for a new file, `overwritten` for an existing one"),
  bytes: z.number().int(),
  notes: z.array(z.string()).describe("notes from afterWrite hooks"),
  diagnostics: writeDiagnosticsSchema
    .optional()
    .describe("new problems this write introduced into the file, when a language server checked it"),
  relPath: z.string().optional().describe("mouaif profile: the root-relative path"),
  chars: z.number().int().optional().describe("mouaif profile: the content's length in characters"),
  lines: z.number().int().optional().describe("mouaif profile: the content's lines"),
});

export type FileWrittenPayload = z.output<typeof fileWrittenPayload>;

/** Lines of a text as an editor counts them: a final newline ends the last line, it starts none. */
function lineCount(text: string): number {
  if (text === "") return 0;
  const breaks = text.split("\n").length - 1;
  return text.endsWith("\n") ? breaks : breaks + 1;
}

const writeInput = z.object({
  path: z.string().min(1).describe("file path, relative to the project root; parent directories are created"),
  content: z.string().describe("the complete new content of the file"),
});

export const writeFileTool = defineTool({
  name: "write_file",
  family: "files",
  access: "write",
  description:
    "Create a file or replace its whole content (parents created). Atomic: written to a temporary file and renamed over the target; an existing file keeps its mode.",
  input: writeInput,
  output: fileWrittenPayload,
  paths: (input) => [input.path],
  async execute(input, ctx): Promise<FileWrittenPayload> {
    const resolved = ctx.resolve(input.path);
    const bytes = Buffer.byteLength(input.content, "utf8");
    const max = ctx.limits.fileWriteMaxBytes;
    if (bytes > max) {
      throw new ToolbeltError(
        "ETOO_LARGE",
        `content is ${bytes} bytes; write_file writes up to ${max} bytes`,
        {
          details: { path: resolved.rel, size: bytes, limit: max },
        },
      );
    }
    // No stat by path here: core checks the target through the held directory, at the write itself.
    const written = await ctx.writeFile(resolved.abs, input.content).catch((error: unknown) => {
      if ((error as NodeJS.ErrnoException).code === "EISDIR")
        throw new ToolbeltError("EISDIR", `${resolved.rel} is a directory`, {
          details: { path: resolved.rel },
        });
      throw error;
    });
    return {
      kind: "file_written",
      path: resolved.rel,
      result: written.created ? "created" : "overwritten",
      bytes: written.bytes,
      notes: written.notes,
      ...(written.diagnostics ? { diagnostics: written.diagnostics } : {}),
      ...(ctx.profile === "mouaif"
        ? { relPath: resolved.rel, chars: input.content.length, lines: lineCount(input.content) }
        : {}),
    };
  },
  render(payload) {
    const d = payload.diagnostics;
    return renderText(
      [
        ["Kind", "file_written"],
        ["Path", payload.path],
        ["Result", payload.result],
        ["Bytes", payload.bytes],
        ["Diagnostics", d && writeDiagnosticsHeader(d)],
      ],
      [...(d ? writeDiagnosticsLines(payload.path, d) : []), ...payload.notes].join("\n"),
    );
  },
});
