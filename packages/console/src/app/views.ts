/// <reference lib="dom" />
// The console's components. Untrusted strings (file bodies, outputs, model text) are only ever
// children of elements, which preact writes as text nodes. Names, commands and summaries are shown
// with core's escape (shown.ts), so bidi overrides, zero-width characters and newlines in them
// cannot reorder, hide or split what the page shows.
import { type ComponentChild, type ComponentChildren, h } from "preact";
import { useState } from "preact/hooks";
import {
  type CardBody,
  cardBody,
  cardFamily,
  cardOutcome,
  cardSubject,
  type DirGroup,
  shellOutput,
} from "./describe.js";
import type { Approval, ConsoleState, Question, QuestionAnswer, Todo, ToolCard } from "./model.js";
import { PanelTree } from "./panel-view.js";
import { shownCommand, shownDir, shownJson, shownLine, shownName } from "./shown.js";

/** Beyond this a body is cut for drawing; the page says so. */
const DRAW_LIMIT = 200_000;

function clip(text: string): { text: string; cut: boolean } {
  return text.length > DRAW_LIMIT ? { text: text.slice(0, DRAW_LIMIT), cut: true } : { text, cut: false };
}

function Pre(props: { text: string; class?: string }): ComponentChild {
  const { text, cut } = clip(props.text);
  return h(
    "div",
    null,
    h("pre", { class: props.class ?? "body-text" }, text),
    cut
      ? h("p", { class: "muted" }, `Showing the first ${DRAW_LIMIT} of ${props.text.length} characters.`)
      : null,
  );
}

function basename(path: string): string {
  const i = path.lastIndexOf("/");
  return i < 0 ? path : path.slice(i + 1);
}

function TreeView(props: { groups: DirGroup[]; matches: boolean; empty: string }): ComponentChild {
  if (props.groups.length === 0) return h("p", { class: "muted" }, props.empty);
  return h(
    "div",
    { class: "tree" },
    ...props.groups.map((group) =>
      h(
        "section",
        { class: "dir-group", key: group.dir },
        h("div", { class: "dir-name" }, group.dir === "." ? "./" : `${shownDir(group.dir)}/`),
        h(
          "ul",
          { class: "dir-entries" },
          ...group.entries.map((entry) =>
            h(
              "li",
              { key: entry.path, class: "entry", "data-path": entry.path },
              h("span", { class: "file-name" }, shownName(basename(entry.path))),
              entry.note ? h("span", { class: "note" }, ` ${shownLine(entry.note)}`) : null,
              props.matches && entry.matches?.length
                ? h(
                    "ol",
                    { class: "matches" },
                    ...entry.matches.map((m, i) =>
                      h(
                        "li",
                        { key: i, class: m.context ? "match context" : "match" },
                        h("span", { class: "line-no" }, String(m.line)),
                        h("code", { class: "match-text" }, shownLine(m.text)),
                      ),
                    ),
                  )
                : null,
            ),
          ),
        ),
      ),
    ),
  );
}

function BodyView(props: { body: CardBody; card: ToolCard }): ComponentChild {
  const { body, card } = props;
  switch (body.type) {
    case "pending":
      return h("p", { class: "muted" }, "Waiting for the result…");
    case "error":
      return h("div", { class: "error-box" }, h("strong", null, body.code), " ", shownLine(body.message));
    case "text":
      return h(Pre, { text: body.text, class: "body-text file-body" });
    case "image":
      return h("img", { class: "image-preview", src: body.src, alt: cardSubject(card) ?? "image" });
    case "tree":
      return h(TreeView, { groups: body.groups, matches: body.matches, empty: body.empty });
    case "diff":
      return h(
        "pre",
        { class: "diff" },
        ...body.lines.map((line, i) => h("span", { key: i, class: `d-${line.kind}` }, `${line.text}\n`)),
      );
    case "written":
      return h(
        "div",
        null,
        h("p", { class: "muted" }, "Content written (the call's own argument):"),
        h(Pre, { text: body.content, class: "body-text written" }),
      );
    case "shell":
      return h(
        "div",
        { class: "shell-body" },
        body.output ? h(Pre, { text: body.output, class: "terminal" }) : null,
        body.exitCode !== undefined
          ? h("p", { class: body.exitCode === 0 ? "exit ok" : "exit bad" }, `exit code ${body.exitCode}`)
          : null,
        body.live !== undefined
          ? h(
              "div",
              { class: "live" },
              h("p", { class: "muted" }, `Live output${body.shellId ? ` of ${body.shellId}` : ""}:`),
              h(Pre, { text: body.live, class: "terminal live-output" }),
            )
          : null,
        !body.output && body.live === undefined && body.exitCode === undefined
          ? h("p", { class: "muted" }, "No output.")
          : null,
      );
    case "raw":
      return h(Pre, { text: body.text });
  }
}

function ToolCardView(props: { card: ToolCard; shells: Record<string, string> }): ComponentChild {
  const { card, shells } = props;
  const [open, setOpen] = useState(false);
  const outcome = cardOutcome(card, shells);
  const rawSubject = cardSubject(card);
  const subject = rawSubject === undefined ? undefined : shownCommand(rawSubject);
  return h(
    "article",
    {
      class: `tool-card tone-${outcome.tone}${open ? " open" : ""}`,
      "data-call-id": card.id,
      "data-tool": card.tool,
    },
    h(
      "button",
      {
        type: "button",
        class: "card-summary",
        "aria-expanded": open ? "true" : "false",
        onClick: () => setOpen(!open),
      },
      h("span", { class: "chevron", "aria-hidden": "true" }, open ? "▾" : "▸"),
      h("span", { class: "tool-name" }, card.tool),
      subject ? h("span", { class: "subject", title: subject }, subject) : null,
      h("span", { class: "outcome", title: shownLine(outcome.text) }, shownLine(outcome.text)),
      card.client ? h("span", { class: "badge" }, "client") : null,
      card.durationMs !== undefined
        ? h("span", { class: "duration" }, `${Math.round(card.durationMs)} ms`)
        : null,
    ),
    open
      ? h(
          "div",
          { class: "card-body" },
          h(BodyView, { body: cardBody(card, shells), card }),
          card.input !== undefined
            ? h(
                "details",
                { class: "input" },
                h("summary", null, "Input"),
                h(Pre, { text: JSON.stringify(card.input, null, 2) }),
              )
            : null,
        )
      : null,
  );
}

export function TodoDock(props: { todos: Todo[] | undefined }): ComponentChild {
  const todos = props.todos ?? [];
  const done = todos.filter((t) => t.status === "completed").length;
  return h(
    "section",
    { class: "dock todo-dock", "aria-label": "Todos" },
    h(
      "h2",
      null,
      "Todos",
      todos.length ? h("span", { class: "muted" }, ` ${done}/${todos.length} done`) : null,
    ),
    todos.length === 0
      ? h("p", { class: "muted" }, "No todos yet.")
      : h(
          "ol",
          { class: "todos" },
          ...todos.map((todo, i) =>
            h(
              "li",
              {
                key: todo.id ?? i,
                class: `todo status-${todo.status}`,
                "aria-current": todo.status === "in_progress" ? "step" : undefined,
              },
              h(
                "span",
                { class: "todo-mark", "aria-hidden": "true" },
                todo.status === "completed" ? "✓" : todo.status === "in_progress" ? "▶" : "○",
              ),
              h("span", { class: "todo-text" }, todo.content),
            ),
          ),
        ),
  );
}

export type Actions = {
  answer(questionId: string, answers: QuestionAnswer[], notes?: string): Promise<void>;
  resolve(requestId: string, approved: boolean): Promise<void>;
};

type SendState = { status: "idle" | "sending" | "sent" | "failed"; error?: string };

function QuestionForm(props: { question: Question; actions: Actions | undefined }): ComponentChild {
  const { question, actions } = props;
  const [chosen, setChosen] = useState<number[][]>(() => question.questions.map(() => []));
  const [texts, setTexts] = useState<string[]>(() => question.questions.map(() => ""));
  const [notes, setNotes] = useState("");
  const [send, setSend] = useState<SendState>({ status: "idle" });
  // An answer is option indexes or free text, never both: typing text clears the options.
  const answers: QuestionAnswer[] = question.questions.map((_, i) =>
    (texts[i] ?? "").trim() ? { text: (texts[i] ?? "").trim() } : { options: chosen[i] ?? [] },
  );
  const complete = answers.every((a) => (a.text ?? "") !== "" || (a.options?.length ?? 0) > 0);
  const choose = (qi: number, oi: number, multiple: boolean, on: boolean): void => {
    setChosen(
      chosen.map((c, i) =>
        i !== qi ? c : multiple ? (on ? [...c, oi].sort((a, b) => a - b) : c.filter((x) => x !== oi)) : [oi],
      ),
    );
    setTexts(texts.map((t, i) => (i === qi ? "" : t)));
  };
  const submit = async (e: Event): Promise<void> => {
    e.preventDefault();
    if (!actions || !complete) return;
    setSend({ status: "sending" });
    try {
      await actions.answer(question.id, answers, notes.trim() || undefined);
      setSend({ status: "sent" });
    } catch (error) {
      setSend({ status: "failed", error: (error as Error).message });
    }
  };
  return h(
    "form",
    { class: "prompt question-form", "data-question-id": question.id, onSubmit: submit },
    h("h3", null, "Question"),
    ...question.questions.map((q, qi) =>
      h(
        "fieldset",
        { key: qi, class: "question" },
        h(
          "legend",
          null,
          q.header ? h("span", { class: "badge" }, shownLine(q.header)) : null,
          " ",
          shownLine(q.question),
        ),
        ...q.options.map((option, oi) =>
          h(
            "label",
            { key: oi, class: "option" },
            h("input", {
              type: q.multiple ? "checkbox" : "radio",
              name: `${question.id}-${qi}`,
              checked: (chosen[qi] ?? []).includes(oi),
              onChange: (ev: Event) =>
                choose(qi, oi, q.multiple === true, (ev.currentTarget as HTMLInputElement).checked),
            }),
            " ",
            shownLine(option),
          ),
        ),
        h("input", {
          type: "text",
          class: "free-text",
          placeholder: q.options.length ? "…or answer in your own words" : "Your answer",
          "aria-label": `Answer to: ${q.question}`,
          value: texts[qi] ?? "",
          onInput: (ev: Event) => {
            const value = (ev.currentTarget as HTMLInputElement).value;
            setTexts(texts.map((t, i) => (i === qi ? value : t)));
            if (value.trim()) setChosen(chosen.map((c, i) => (i === qi ? [] : c)));
          },
        }),
      ),
    ),
    h("textarea", {
      class: "notes",
      placeholder: "Notes (optional)",
      "aria-label": "Notes",
      value: notes,
      onInput: (ev: Event) => setNotes((ev.currentTarget as HTMLTextAreaElement).value),
    }),
    question.timeoutSeconds !== undefined
      ? h(
          "p",
          { class: "muted" },
          `The agent waits ${question.timeoutSeconds} s; a later answer still reaches it.`,
        )
      : null,
    h(
      "div",
      { class: "prompt-actions" },
      h(
        "button",
        {
          type: "submit",
          class: "primary",
          disabled: !actions || !complete || send.status === "sending" || send.status === "sent",
        },
        send.status === "sent" ? "Answer sent" : "Send answer",
      ),
      !actions ? h("span", { class: "muted" }, "Replay: answers cannot be sent.") : null,
      send.status === "failed" ? h("span", { class: "error-text" }, send.error ?? "failed") : null,
    ),
  );
}

function ApprovalForm(props: { approval: Approval; actions: Actions | undefined }): ComponentChild {
  const { approval, actions } = props;
  const [send, setSend] = useState<SendState>({ status: "idle" });
  const decide = async (approved: boolean): Promise<void> => {
    if (!actions) return;
    setSend({ status: "sending" });
    try {
      await actions.resolve(approval.id, approved);
      setSend({ status: "sent" });
    } catch (error) {
      setSend({ status: "failed", error: (error as Error).message });
    }
  };
  const busy = !actions || send.status === "sending" || send.status === "sent";
  return h(
    "div",
    { class: "prompt approval", "data-request-id": approval.id },
    h("h3", null, "Approval needed"),
    h(
      "p",
      null,
      h("span", { class: "tool-name" }, approval.tool),
      " ",
      h("span", { class: "badge" }, approval.access),
      " ",
      h("span", { class: "approval-summary" }, shownCommand(approval.summary)),
    ),
    approval.input !== undefined ? h(Pre, { text: shownJson(approval.input) }) : null,
    h(
      "div",
      { class: "prompt-actions" },
      h(
        "button",
        { type: "button", class: "primary approve", disabled: busy, onClick: () => decide(true) },
        "Approve",
      ),
      h(
        "button",
        { type: "button", class: "danger deny", disabled: busy, onClick: () => decide(false) },
        "Deny",
      ),
      send.status === "sent" ? h("span", { class: "muted" }, "Sent.") : null,
      send.status === "failed" ? h("span", { class: "error-text" }, send.error ?? "failed") : null,
    ),
  );
}

function describeAnswer(answer: unknown, question: Question, index: number): string {
  if (typeof answer !== "object" || answer === null) return String(answer);
  const a = answer as { options?: unknown; text?: unknown };
  if (typeof a.text === "string") return a.text;
  if (Array.isArray(a.options)) {
    const options = question.questions[index]?.options ?? [];
    return a.options.map((o) => (typeof o === "number" ? (options[o] ?? `#${o}`) : String(o))).join(", ");
  }
  return JSON.stringify(answer);
}

function QuestionRecord(props: { question: Question }): ComponentChild {
  const { question } = props;
  const answered = question.answered;
  return h(
    "div",
    { class: "record question-record", "data-question-id": question.id },
    h("span", { class: "record-kind" }, "Question"),
    h("span", null, question.questions.map((q) => q.question).join(" / ")),
    answered
      ? h(
          "span",
          { class: "record-outcome" },
          answered.superseded
            ? "superseded"
            : `answered: ${answered.answers.map((a, i) => describeAnswer(a, question, i)).join("; ")}${answered.notes ? ` (notes: ${answered.notes})` : ""}${answered.late ? " (late)" : ""}`,
        )
      : h("span", { class: "record-outcome pending" }, "waiting for an answer"),
  );
}

function ApprovalRecord(props: { approval: Approval }): ComponentChild {
  const { approval } = props;
  return h(
    "div",
    { class: "record approval-record", "data-request-id": approval.id },
    h("span", { class: "record-kind" }, "Approval"),
    h(
      "span",
      null,
      shownCommand(
        approval.summary.startsWith(approval.tool)
          ? approval.summary
          : `${approval.tool}: ${approval.summary}`,
      ),
    ),
    approval.resolved
      ? h(
          "span",
          { class: `record-outcome ${approval.resolved.approved ? "ok" : "bad"}` },
          `${approval.resolved.approved ? "approved" : "denied"} by ${approval.resolved.by}`,
        )
      : h("span", { class: "record-outcome pending" }, "waiting for a decision"),
  );
}

export function Attention(props: { state: ConsoleState; actions: Actions | undefined }): ComponentChild {
  const questions = Object.values(props.state.questions).filter((q) => !q.answered);
  const approvals = Object.values(props.state.approvals).filter((a) => !a.resolved);
  if (questions.length === 0 && approvals.length === 0) return null;
  return h(
    "section",
    { id: "waiting", class: "attention", "aria-label": "Waiting for you" },
    h("h2", null, "Waiting for you"),
    ...approvals.map((a) => h(ApprovalForm, { key: `a-${a.id}`, approval: a, actions: props.actions })),
    ...questions.map((q) => h(QuestionForm, { key: `q-${q.id}`, question: q, actions: props.actions })),
  );
}

export function Timeline(props: { state: ConsoleState }): ComponentChild {
  const { state } = props;
  const items: ComponentChildren[] = state.timeline.map((item) => {
    switch (item.kind) {
      case "card": {
        const card = state.cards[item.key];
        return card ? h(ToolCardView, { key: `c-${item.key}`, card, shells: state.shells }) : null;
      }
      case "panel": {
        const panel = state.panels[item.key];
        return panel
          ? h(
              "article",
              { key: `p-${item.key}`, class: "panel", "data-panel": item.key },
              h(PanelTree, { tree: panel.tree }),
            )
          : null;
      }
      case "question": {
        const question = state.questions[item.key];
        return question ? h(QuestionRecord, { key: `q-${item.key}`, question }) : null;
      }
      case "approval": {
        const approval = state.approvals[item.key];
        return approval ? h(ApprovalRecord, { key: `a-${item.key}`, approval }) : null;
      }
      default:
        return h("div", { key: `n-${item.key}`, class: "notice" }, state.notices[item.key] ?? "");
    }
  });
  return h(
    "section",
    { class: "timeline", "aria-label": "Session" },
    items.length ? items : h("p", { class: "muted empty" }, "Nothing has happened in this session yet."),
  );
}

/** Shells whose output has no card to sit in (started before the page opened, say). */
export function LooseShells(props: { state: ConsoleState }): ComponentChild {
  const claimed = new Set<string>();
  for (const card of Object.values(props.state.cards)) {
    claimed.add(card.id);
    if (cardFamily(card) !== "shell") continue;
    const { id } = shellOutput(card, props.state.shells);
    if (id) claimed.add(id);
  }
  const loose = Object.entries(props.state.shells).filter(([id]) => !claimed.has(id));
  if (loose.length === 0) return null;
  return h(
    "section",
    { class: "dock shells" },
    h("h2", null, "Shells"),
    ...loose.map(([id, output]) =>
      h(
        "div",
        { key: id },
        h("p", { class: "muted" }, id),
        h(Pre, { text: output, class: "terminal live-output" }),
      ),
    ),
  );
}
