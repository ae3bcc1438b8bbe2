import { defineTool, errorPayload, renderText, z } from "@toolbelt/core";

const todoStatus = z.enum(["pending", "in_progress", "completed"]);

const todo = z.object({ id: z.string().optional(), content: z.string(), status: todoStatus });

const todosPayload = z.object({
  kind: z.literal("todos"),
  todos: z.array(todo),
  counts: z.object({ pending: z.number().int(), in_progress: z.number().int(), completed: z.number().int() }),
  note: z.string(),
});

export type TodoStatus = z.output<typeof todoStatus>;
export type Todo = z.output<typeof todo>;
export type TodosPayload = z.output<typeof todosPayload>;

const TODOS_STATE = "ui.todos";

/** The list last shown for this session (empty before the first update_todos). */
export function currentTodos(session: { state<T>(key: string, init: () => T): T }): Todo[] {
  return [...session.state<{ todos: Todo[] }>(TODOS_STATE, () => ({ todos: [] })).todos];
}

const MARK: Record<TodoStatus, string> = { completed: "[x]", in_progress: "[>]", pending: "[ ]" };

export const updateTodos = defineTool({
  name: "update_todos",
  family: "ui",
  access: "interact",
  requires: { rootAgentOnly: true, actModeOnly: true },
  description:
    "Show the user your task list. Send the WHOLE list every time (it replaces the previous one). Exactly one item is in_progress while work remains; mark items completed as soon as they are done. This call does not end your turn: keep working afterwards.",
  input: z.object({
    todos: z
      .array(
        z.object({
          id: z.string().min(1).max(64).optional().describe("stable id of the item"),
          content: z.string().min(1).max(500).describe("what to do, imperative"),
          status: z.enum(["pending", "in_progress", "completed"]),
        }),
      )
      .max(100)
      .describe("the complete list, in order"),
  }),
  output: todosPayload,
  execute(input, ctx) {
    const active = input.todos.filter((t) => t.status === "in_progress");
    const pending = input.todos.filter((t) => t.status === "pending");
    if (active.length > 1) {
      return errorPayload(
        "EINVAL_INPUT",
        `${active.length} items are in_progress (${active.map((t) => JSON.stringify(t.content)).join(", ")}); exactly one item may be in_progress at a time — mark the others pending or completed`,
        { field: "todos", in_progress: active.length },
      );
    }
    if (active.length === 0 && pending.length > 0) {
      return errorPayload(
        "EINVAL_INPUT",
        "no item is in_progress while items are still pending; mark exactly one item (the one you work on now) in_progress",
        { field: "todos", in_progress: 0 },
      );
    }
    const ids = input.todos.map((t) => t.id).filter((id): id is string => id !== undefined);
    const dup = ids.find((id, i) => ids.indexOf(id) !== i);
    if (dup !== undefined) {
      return errorPayload("EINVAL_INPUT", `todo id ${JSON.stringify(dup)} is used twice`, { field: "todos" });
    }
    const todos: Todo[] = input.todos.map((t) =>
      t.id === undefined
        ? { content: t.content, status: t.status }
        : { id: t.id, content: t.content, status: t.status },
    );
    ctx.session.state<{ todos: Todo[] }>(TODOS_STATE, () => ({ todos: [] })).todos = todos;
    ctx.emit({ type: "todos", todos });
    const counts: Record<TodoStatus, number> = { pending: 0, in_progress: 0, completed: 0 };
    for (const t of todos) counts[t.status] += 1;
    return {
      kind: "todos",
      todos,
      counts,
      note:
        todos.length > 0 && counts.completed === todos.length
          ? "All items are completed. The list is shown to the user; this call does not end your turn."
          : "The list is shown to the user. This call does not end your turn: continue with the in-progress item.",
    } satisfies TodosPayload;
  },
  render(payload) {
    const { counts } = payload;
    return renderText(
      [
        ["Kind", payload.kind],
        [
          "Todos",
          `${payload.todos.length} (${counts.completed} completed, ${counts.in_progress} in progress, ${counts.pending} pending)`,
        ],
      ],
      [...payload.todos.map((t) => `${MARK[t.status]} ${t.content}`), "", payload.note].join("\n").trim(),
    );
  },
});
