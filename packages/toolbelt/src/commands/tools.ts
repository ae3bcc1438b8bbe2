import {
  type BoundToolSchema,
  type EditBackend,
  toAnthropicTool,
  toMcpTool,
  toOpenAITool,
} from "@toolbelt/core";
import type { Argv } from "yargs";
import { EXIT_OK } from "./exit.js";
import { type ArgsOf, sessionOptions } from "./options.js";
import { checkEnvironment, openSession } from "./session.js";

export const command = "tools";
export const describe = "print the schemas a session binds now";

export function options(y: Argv) {
  return sessionOptions(y).option("format", {
    choices: ["json", "openai", "anthropic", "mcp", "names", "text"],
    default: "json",
    describe: "schemas as JSON (json, openai, anthropic, mcp), or for people: names, text",
  });
}

export type ToolsArgs = ArgsOf<typeof options>;

/** What one session binds, as `tools` prints it. */
interface BoundSet {
  profile: string;
  edit_backend: EditBackend;
  /** The bound schemas (deferred tools are listed by name only). */
  tools: BoundToolSchema[];
  deferred: string[];
}

/** What `toolbelt tools --format FORMAT` prints for a bound set. */
export function toolsText(format: string, bound: BoundSet): string {
  const { tools, deferred } = bound;
  const line = (value: unknown) => `${JSON.stringify(value)}\n`;
  switch (format) {
    case "openai":
      return line(tools.map(toOpenAITool));
    case "anthropic":
      return line(tools.map(toAnthropicTool));
    case "mcp":
      return line({ tools: tools.map(toMcpTool) });
    case "names":
      return [
        ...tools.map((t) => `${t.name}\n`),
        ...deferred.map((name) => `${name} (deferred: bound through tool_search)\n`),
      ].join("");
    case "text": {
      let out = `profile ${bound.profile}, edit tool ${bound.edit_backend}\n\n`;
      for (const t of tools) {
        const first = t.description.split(/(?<=\.)\s/)[0] ?? t.description;
        out += `${t.name.padEnd(22)} ${first}\n`;
      }
      if (deferred.length) out += `\ndeferred (bound through tool_search): ${deferred.join(", ")}\n`;
      return `${out}\ntoolbelt run TOOL --help shows a tool's input fields\n`;
    }
    default:
      return line({ profile: bound.profile, edit_backend: bound.edit_backend, tools, deferred });
  }
}

/** `toolbelt tools`: what a session with these options binds now. */
export async function tools(args: ToolsArgs): Promise<number> {
  checkEnvironment();
  const session = await openSession(args);
  try {
    const { tools, deferred } = session.bind();
    process.stdout.write(
      toolsText(args.format, {
        profile: session.profile,
        edit_backend: session.editBackend(),
        tools,
        deferred,
      }),
    );
    return EXIT_OK;
  } finally {
    await session.close();
  }
}
