import path from "node:path";
import { explainCall, type PolicyExplanation, type RuleReference } from "@toolbelt/core/internal";
import type { Argv } from "yargs";
import { openToolbelt } from "../create.js";
import { writeLine } from "../output.js";
import { EXIT_OK } from "./exit.js";
import { type ArgsOf, trustOption } from "./options.js";

export const command = "rules <action> <line>";
export const describe =
  "rules check 'COMMAND': what the permission policy decides for a shell command line, and which rule decided";

export function options(y: Argv) {
  return y
    .positional("action", { choices: ["check"] as const, demandOption: true, describe: "check" })
    .positional("line", { type: "string", demandOption: true, describe: "the command line to judge" })
    .option("root", {
      type: "string",
      default: process.cwd(),
      describe: "project root (its configs/app.json is read)",
      defaultDescription: "current directory",
    })
    .option("config", { type: "string", describe: "config file layered over <root>/configs/app.json" })
    .option("trust", trustOption)
    .option("format", { choices: ["text", "json"] as const, default: "text" as const });
}

export type RulesArgs = ArgsOf<typeof options>;

function where(rule: RuleReference): string {
  return `${rule.kind} rule ${JSON.stringify(rule.rule)} (${rule.source}${rule.layer ? `, from ${rule.layer}` : ""})`;
}

function text(result: PolicyExplanation): string {
  const decided = result.rule
    ? `by ${where(result.rule)}${result.part !== undefined ? ` for: ${result.part}` : ""}`
    : result.why
      ? `because ${result.why}${result.part !== undefined ? `: ${result.part}` : ""}`
      : `by ${result.source} (no rule decides the whole line)`;
  const lines = [`${result.decision} ${decided}`];
  for (const part of result.parts) {
    const said = part.rule ? where(part.rule) : part.why ? `asks: ${part.why}` : "no rule";
    lines.push(`  ${(part.decision ?? "-").padEnd(5)} ${part.kind.padEnd(7)} ${part.text}  — ${said}`);
  }
  return `${lines.join("\n")}\n`;
}

/**
 * `toolbelt rules check 'COMMAND'`: the decision a `shell` call with that command line would get in
 * this project (no `--allow`, no hooks run), the rule that made it with the config layer it came
 * from, and what the rules say of each command and redirect of the line. A session opens as `run
 * shell` would, so a rule whose examples disagree fails here too (exit 2).
 */
export async function rules(args: RulesArgs): Promise<number> {
  const session = await openToolbelt({
    root: path.resolve(args.root),
    ...(args.config ? { configFile: args.config } : {}),
    ...(args.trust !== undefined ? { trustProject: args.trust } : {}),
    families: ["shell"],
    allow: [],
  });
  try {
    const result = await explainCall(session, "shell", { command: args.line });
    if (args.format === "json") writeLine(result);
    else process.stdout.write(text(result));
  } finally {
    await session.close();
  }
  return EXIT_OK;
}
