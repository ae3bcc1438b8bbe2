import path from "node:path";
import {
  addTrustedProject,
  listTrustedProjects,
  removeTrustedProject,
  TRUST_FILE,
  userConfigDir,
} from "@toolbelt/core/internal";
import type { Argv } from "yargs";
import { EXIT_OK, EXIT_TOOL_ERROR, UsageError } from "./exit.js";
import type { ArgsOf } from "./options.js";

export const command = "trust [dir]";
export const describe =
  "mark a project trusted (its configs/app.json and .mcp.json may run code and loosen policy); --list, --remove";

export function options(y: Argv) {
  return y
    .positional("dir", {
      type: "string",
      describe: "project directory",
      defaultDescription: "current directory",
    })
    .option("list", { type: "boolean", describe: "list the trusted projects" })
    .option("remove", { type: "boolean", describe: "forget the directory instead" });
}

export type TrustArgs = ArgsOf<typeof options>;

/** `toolbelt trust [DIR] | --list | --remove`: the user's list of trusted projects. */
export async function trust(args: TrustArgs): Promise<number> {
  const store = userConfigDir();
  if (args.list) {
    if (args.dir !== undefined || args.remove)
      throw new UsageError("--list takes no directory and no --remove");
    for (const p of listTrustedProjects(store)) process.stdout.write(`${p.path}\n`);
    return EXIT_OK;
  }
  const dir = path.resolve(args.dir ?? process.cwd());
  if (args.remove) {
    const removed = await removeTrustedProject(dir, store);
    process.stderr.write(
      removed ? `toolbelt: ${dir} is no longer trusted\n` : `toolbelt: ${dir} was not trusted\n`,
    );
    return removed ? EXIT_OK : EXIT_TOOL_ERROR;
  }
  const real = await addTrustedProject(dir, store);
  process.stderr.write(`toolbelt: trusted ${real} (recorded in ${path.join(store, TRUST_FILE)})\n`);
  return EXIT_OK;
}
