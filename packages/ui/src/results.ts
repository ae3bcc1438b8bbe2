import type { ToolResult } from "@toolbelt/core";
import type { presentUi } from "./present-ui.js";
import type { askUserQuestion } from "./questions.js";
import type { updateTodos } from "./todos.js";

/** What each ui tool returns. */
export interface UiResults {
  update_todos: ToolResult<typeof updateTodos>;
  ask_user_question: ToolResult<typeof askUserQuestion>;
  present_ui: ToolResult<typeof presentUi>;
}

declare module "@toolbelt/core" {
  interface ToolResultMap extends UiResults {}
}
