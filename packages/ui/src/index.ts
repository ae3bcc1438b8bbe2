import { definePlugin, type Plugin } from "@toolbelt/core";
import { contributions } from "./contrib.js";
import { presentUi } from "./present-ui.js";
import { askUserQuestion } from "./questions.js";
import { updateTodos } from "./todos.js";

export {
  type Cell,
  COMPONENTS,
  type ComponentName,
  checkTreeLimits,
  renderTreeText,
  UI_LIMITS,
  type UiNode,
  UiValidationError,
  validateTree,
} from "./components.js";
export { presentUi, type UiPresentedPayload } from "./present-ui.js";
export {
  type AnswerView,
  answerQuestion,
  askUserQuestion,
  type LateAnswer,
  type PendingQuestion,
  pendingQuestions,
  type QuestionAnswersPayload,
  type QuestionPayload,
  type QuestionPendingPayload,
  type QuestionSupersededPayload,
  questionsFile,
  takeLateAnswers,
} from "./questions.js";
export type { UiResults } from "./results.js";
export { parseTypedAnswer, type TerminalClientOptions, terminalClient } from "./terminal-client.js";
export { currentTodos, type Todo, type TodoStatus, type TodosPayload, updateTodos } from "./todos.js";

/** The ui family as a plugin: its tools, registered by createToolbelt(). */
export const family: Plugin = definePlugin({
  name: "ui",
  contributes: contributions,
  tools: [updateTodos, askUserQuestion, presentUi],
});

export {
  checkQuestionResponse,
  contributions,
  type QuestionRequest,
  type QuestionResponse,
  uiEvents,
} from "./contrib.js";
