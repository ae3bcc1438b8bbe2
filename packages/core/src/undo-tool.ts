import { z } from "zod";
import { restoreResultSchema } from "./checkpoint-api.js";
import { renderText } from "./text-format.js";
import { defineTool } from "./tool.js";

// Core's own tool (like tool_search) because checkpoints are core's: every family's writes are
// recorded by the session write path, so undoing them belongs to no family. Opt-in: the session
// binds it only with `checkpoints.undoTool: true` (a model that can rewind can also destroy work
// the user made after its changes are checkpointed — the conflict check refuses that, but the
// choice to hand a model this power is the user's).
export const undoTool = defineTool({
  name: "undo",
  family: "checkpoints",
  access: "write",
  description:
    'Restore files to how they were before an earlier tool call changed them. `checkpoint`: "last" (default) undoes the most recent change; a checkpoint id or call id rewinds every change from that one on. Refuses, changing nothing, if a file was changed since by someone else. The undo is itself recorded, so undoing it again restores the files.',
  input: z.object({
    checkpoint: z.string().min(1).optional().describe('A checkpoint id, a call id, or "last" (default).'),
  }),
  output: restoreResultSchema,
  async execute(input, ctx) {
    // This call has recorded nothing yet, so "last" is the change before it.
    return ctx.session.checkpoints.restore(input.checkpoint ?? "last", {
      writer: (changes) => ctx.writeFiles(changes),
    });
  },
  render: (p) =>
    renderText(
      [
        ["Kind", p.kind],
        ["Restored-To", `before ${p.restored_to}`],
        ["Undo-With", p.checkpoint ?? "(nothing changed)"],
        ["Files", p.files.length],
      ],
      [...p.files.map((f) => `${f.action}: ${f.path}`), ...p.unchanged.map((u) => `unchanged: ${u}`)].join(
        "\n",
      ),
    ),
});
