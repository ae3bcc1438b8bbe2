// An agent loop in ~80 lines: a scripted "model" decides each step from what the tools returned so
// far, toolbelt runs the calls, and the transcript is printed. Swap `scriptedModel` for a real
// model client: it receives the bound tool schemas and the transcript, and returns tool calls.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { createToolbelt } from "@toolbelt/toolbelt";

const root = process.argv[2] ?? mkdtempSync(path.join(os.tmpdir(), "agent-loop-"));
const ownRoot = process.argv[2] === undefined;
if (ownRoot) {
  mkdirSync(path.join(root, "src"), { recursive: true });
  writeFileSync(
    path.join(root, "src", "math.ts"),
    "export function add(a: number, b: number) {\n  // TODO: handle NaN\n  return a + b;\n}\n",
  );
  writeFileSync(path.join(root, "src", "index.ts"), 'export { add } from "./math.js";\n');
}

/** The "model": looks at the transcript and returns the next calls, or a final answer. */
function scriptedModel(transcript) {
  const last = transcript.at(-1);
  switch (transcript.length) {
    case 0:
      return {
        calls: [
          { tool: "list_files", input: { pattern: "src" } },
          { tool: "search_files", input: { query: "TODO" } },
        ],
      };
    case 2: {
      // Read the first file the search found.
      const hit = last.payload.entries?.[0]?.path ?? "src/math.ts";
      return { calls: [{ tool: "read_file", input: { path: hit } }] };
    }
    case 3:
      return {
        calls: [
          {
            tool: "edit_file",
            input: {
              path: last.input.path,
              old_text: "  // TODO: handle NaN\n  return a + b;",
              new_text:
                '  if (Number.isNaN(a) || Number.isNaN(b)) throw new RangeError("NaN");\n  return a + b;',
            },
          },
        ],
      };
    case 4:
      return {
        calls: [
          { tool: "read_file", input: { path: transcript[2].input.path } },
          { tool: "read_file", input: { path: transcript[2].input.path } },
        ],
      };
    default:
      return { answer: "Handled the TODO: add() now rejects NaN." };
  }
}

const session = await createToolbelt({ root, config: { agent: { edit_tool: "edit_file" } } });
const { tools } = session.bind();
console.log(`model sees ${tools.length} tools: ${tools.map((t) => t.name).join(", ")}\n`);

// The model-facing text of each result arrives on the tool_result event of its call.
const texts = new Map();
session.on("tool_result", (event) => texts.set(event.call_id, event.text));

const transcript = [];
for (let turn = 1; turn <= 10; turn++) {
  const reply = scriptedModel(transcript);
  if (reply.answer) {
    console.log(`assistant: ${reply.answer}`);
    break;
  }
  // One model step: read-only calls run concurrently, edits one at a time, results in order.
  const calls = reply.calls.map((call, i) => ({ ...call, id: `t${turn}.${i}` }));
  const payloads = await session.step(calls);
  for (const [i, call] of calls.entries()) {
    transcript.push({ ...call, payload: payloads[i] });
    console.log(`→ ${call.tool} ${JSON.stringify(call.input)}\n${texts.get(call.id)}\n`);
  }
}
await session.close();
if (ownRoot) rmSync(root, { recursive: true, force: true });
