import path from "node:path";
import type { CommandWrapper, Plugin } from "@toolbelt/core";
import {
  describeExampleProblem,
  describeHooks,
  ruleExampleProblems,
  ruleWarnings,
} from "@toolbelt/core/internal";
import type { Argv } from "yargs";
import { createToolbelt, resolveSessionConfig } from "../create.js";
import { loadFamilies } from "../families.js";
import { writeLine } from "../output.js";
import { familiesFor } from "../tool-families.js";
import { version } from "../version.js";
import { EXIT_OK } from "./exit.js";
import { type ArgsOf, trustOption, workspaceOption } from "./options.js";
import { sessionRoot } from "./session.js";

export const command = "doctor";
export const describe = "report which ripgrep, sandbox, pty and language servers were found";

export function options(y: Argv) {
  return y
    .option("root", { type: "string", defaultDescription: "current directory" })
    .option("workspace", workspaceOption)
    .option("config", { type: "string" })
    .option("trust", trustOption)
    .option("format", { choices: ["text", "json"], default: "text" });
}

export type DoctorArgs = ArgsOf<typeof options>;

/** The command-line parser a family contributes (the shell family's), to check `shell(...)` rule examples. */
function parseCommandLine(plugins: readonly Plugin[]) {
  return plugins.find((p) => p.contributes?.parseCommandLine)?.contributes?.parseCommandLine;
}

/** `toolbelt doctor`: what each family found on this machine, for this root and config. */
export async function doctor(args: DoctorArgs): Promise<number> {
  if (args.workspace !== undefined && args.workspace !== "local") {
    const { root, workspace } = await sessionRoot(args);
    const { workspaceDoctor } = await import("../workspace-session.js");
    print(
      await workspaceDoctor({
        root,
        ...(workspace !== undefined ? { workspace } : {}),
        ...(args.trust !== undefined ? { trustProject: args.trust } : {}),
      }),
      args.format,
    );
    return EXIT_OK;
  }
  const root = path.resolve(args.root ?? ".");
  const configOptions = {
    ...(args.config ? { configFile: args.config } : {}),
    ...(args.trust !== undefined ? { trustProject: args.trust } : {}),
  };
  const { config, trust } = await resolveSessionConfig(root, configOptions);
  const plugins = await loadFamilies();
  // The wrappers a session here would start processes through (the shell family's sandbox), from a
  // session of the families a `run search_files` loads: families say how their processes would run.
  const families = familiesFor("search_files", false);
  const wrapping = await createToolbelt({
    root,
    ...configOptions,
    ...(families ? { families } : {}),
    allow: [],
  }).catch(() => undefined);
  const wrapCommand: CommandWrapper | undefined = wrapping
    ? (spec, purpose) => wrapping.wrapCommand(spec, purpose)
    : undefined;
  const report: Check[] = [
    { family: "core", name: "node", status: "ok", detail: process.version },
    { family: "core", name: "toolbelt", status: "ok", detail: version() },
    {
      family: "trust",
      name: "project",
      status: trust.trusted ? "ok" : "skipped",
      detail: trust.trusted ? `trusted: ${trust.reason}` : `not trusted: ${trust.reason}`,
    },
    ...trust.ignored.map((i) => ({
      family: "trust",
      name: `ignored ${i.key}`,
      status: "skipped",
      detail: `${i.source}: ${i.why}`,
    })),
    ...describeHooks(config, root).map((h) => ({ family: "hooks", ...h })),
    ...ruleWarnings(config).map((w) => ({
      family: "rules",
      name: w.key,
      status: "warning",
      detail: `${JSON.stringify(w.rule)}: ${w.why}`,
    })),
    // A rule whose examples disagree refuses every session; doctor names each one instead.
    ...(await ruleExampleProblems(config, parseCommandLine(plugins))).map((p) => ({
      family: "rules",
      name: p.rule.source,
      status: "error",
      detail: describeExampleProblem(p),
    })),
  ];
  for (const plugin of plugins) {
    if (!plugin.doctor) continue;
    try {
      for (const check of await plugin.doctor({
        root,
        config,
        trust,
        ...(wrapCommand ? { wrapCommand } : {}),
      }))
        report.push({ family: plugin.name, ...check });
    } catch (error) {
      report.push({
        family: plugin.name,
        name: "doctor",
        status: "unavailable",
        detail: (error as Error).message,
      });
    }
  }
  await wrapping?.close();
  print(report, args.format);
  return EXIT_OK;
}

type Check = { family: string; name: string; status: string; detail: string };

function print(report: Check[], format: string): void {
  if (format === "json") writeLine(report);
  else
    for (const r of report)
      process.stdout.write(`${r.status.padEnd(11)} ${r.family}/${r.name}: ${r.detail}\n`);
}
