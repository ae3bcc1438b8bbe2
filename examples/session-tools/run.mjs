// A scripted agent turn that uses every session tool through the SDK. A real agent loop would send
// session.bind().tools to its model and feed the model's calls to session.call(); here the "model"
// is a fixed script and the "user" is a scripted client that answers questions and draws UI events.
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { createSession, definePlugin, defineTool, z } from "@toolbelt/core";
import { family as projects } from "@toolbelt/projects";
import { answerQuestion, pendingQuestions, takeLateAnswers, family as ui } from "@toolbelt/ui";

/** A plugin tool the session defers until tool_search finds it. */
const changelog = definePlugin({
  name: "changelog",
  tools: [
    defineTool({
      name: "changelog_entry",
      family: "changelog",
      access: "read",
      deferrable: true,
      description: "Draft a changelog entry for a change",
      input: z.object({ summary: z.string(), breaking: z.boolean().optional() }),
      execute: (input) => ({
        kind: "changelog_entry",
        text: `- ${input.summary}${input.breaking ? " (breaking)" : ""}`,
      }),
    }),
  ],
});

/** Two projects on disk: the one we start in and a docs site with its own AGENTS.md and a skill. */
function makeWorkspace() {
  const base = realpathSync(mkdtempSync(path.join(os.tmpdir(), "toolbelt-session-tools-")));
  const app = path.join(base, "app");
  const docs = path.join(base, "docs");
  mkdirSync(app);
  mkdirSync(path.join(docs, ".toolbelt", "skills", "publish"), { recursive: true });
  writeFileSync(
    path.join(docs, "AGENTS.md"),
    "Docs site: build with `npm run docs`; never edit generated/.\n",
  );
  writeFileSync(
    path.join(docs, ".toolbelt", "skills", "publish", "SKILL.md"),
    "---\nname: publish\ndescription: publish the docs site\n---\nRun npm run docs:publish.\n",
  );
  return { base, app, docs };
}

/**
 * Runs the script and returns what happened (the tool results and the events a UI would draw).
 * `log` receives one line per step.
 */
export async function runDemo({ log = console.log } = {}) {
  const { base, app, docs } = makeWorkspace();
  // The scripted user: answers the first question after 50 ms, the second only after 300 ms
  // (later than the tool waits for it), and draws every generative_ui event as text.
  let asked = 0;
  const client = {
    name: "scripted",
    capabilities: ["ask_user", "generative_ui"],
    ask: async (_request) => {
      asked += 1;
      await new Promise((r) => setTimeout(r, asked === 1 ? 50 : 300));
      return asked === 1
        ? { answers: [{ options: [1] }], notes: "keep the old flag working" }
        : { answers: [{ text: "next Tuesday" }] };
    },
  };
  process.env.TOOLBELT_HOME ??= path.join(base, "home");
  const session = await createSession({
    root: app,
    client,
    plugins: [ui, projects, changelog],
    config: {
      agent: { workspace_mode: "auto", tool_search: "on" },
      projects: [
        { key: "docs", path: docs, description: "the documentation site" },
        { repository: "acme/mobile", description: "not cloned on this machine" },
      ],
    },
  });
  const events = [];
  session.on("*", (event) => {
    if (["todos", "question", "question_answered", "generative_ui", "project_switched"].includes(event.type))
      events.push(event);
    if (event.type === "generative_ui") log(`[ui]\n${event.text}`);
  });
  /** @type {Record<string, Array<Record<string, unknown>>>} tool name → its payloads, in call order */
  const results = {};
  const call = async (name, input) => {
    const { payload, text } = await session.callWithText(name, input);
    results[name] = [...(results[name] ?? []), payload];
    log(`> ${name}\n${text}\n`);
    return payload;
  };

  try {
    const { tools, deferred } = session.bind();
    log(`bound: ${tools.map((t) => t.name).join(", ")}\ndeferred: ${deferred.join(", ")}\n`);

    await call("update_todos", {
      todos: [
        { id: "ask", content: "Ask how to handle the old flag", status: "in_progress" },
        { id: "report", content: "Show the plan", status: "pending" },
        { id: "docs", content: "Update the docs project", status: "pending" },
      ],
    });
    await call("ask_user_question", {
      questions: [{ question: "Remove the --legacy flag?", options: ["Remove it", "Deprecate it first"] }],
    });
    // This one times out; the answer comes later and the loop picks it up below.
    const pending = await call("ask_user_question", {
      questions: [{ question: "When do we release?", options: ["Today", "This week"] }],
      timeout_seconds: 0.1,
    });
    log(
      `open questions: ${pendingQuestions(session)
        .map((q) => `${q.question_id} (${q.status})`)
        .join(", ")}\n`,
    );

    await call("update_todos", {
      todos: [
        { id: "ask", content: "Ask how to handle the old flag", status: "completed" },
        { id: "report", content: "Show the plan", status: "in_progress" },
        { id: "docs", content: "Update the docs project", status: "pending" },
      ],
    });
    await call("present_ui", {
      tree: {
        component: "Card",
        id: "plan",
        title: "Plan: deprecate --legacy",
        children: [
          { component: "Badge", text: "decided", tone: "success" },
          {
            component: "Table",
            columns: ["step", "where"],
            rows: [
              ["warn on use", "cli.ts"],
              ["document", "docs"],
            ],
          },
          { component: "Stack", id: "notes", children: [] },
          { component: "Link", url: "https://example.com/issues/42", text: "issue 42" },
        ],
      },
    });
    await call("present_ui", {
      into: "notes",
      tree: { component: "Paragraph", text: "User: keep the old flag working." },
    });

    await call("tool_search", { query: "changelog" });
    await call("changelog_entry", { summary: "Deprecate --legacy" });

    // Between turns the agent loop picks up answers that came after their question timed out.
    await new Promise((r) => setTimeout(r, 400));
    const late = takeLateAnswers(session);
    for (const answer of late) log(`late answer for ${answer.question_id}:\n${answer.text}\n`);

    await call("list_projects", {});
    await call("switch_project", { key: "acme/mobile" }); // refused: no checkout
    await call("switch_project", { key: "docs" });
    const child = await session.fork();
    log(`a sub-agent forked now works in ${child.root}\n`);

    await call("update_todos", {
      todos: [
        { id: "ask", content: "Ask how to handle the old flag", status: "completed" },
        { id: "report", content: "Show the plan", status: "completed" },
        { id: "docs", content: "Update the docs project", status: "in_progress" },
      ],
    });
    // A UI could also answer from outside the call; unknown ids are refused, never ignored.
    const stale = answerQuestion(session, pending.question_id, { answers: [{ options: [0] }] });
    return {
      results,
      events,
      late,
      skills: session.skills.map((s) => s.name),
      childRoot: child.root,
      docs,
      stale,
    };
  } finally {
    await session.close();
    rmSync(base, { recursive: true, force: true });
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  runDemo().catch((error) => {
    console.error(error);
    process.exitCode = 1;
  });
}
