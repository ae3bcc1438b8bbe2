import path from "node:path";
import type { ClientInfo, Plugin, Session, ToolbeltConfig, TrustInfo } from "@toolbelt/core";
import { ENV, readEnv, ruleWarnings } from "@toolbelt/core/internal";
import { openToolbelt } from "../create.js";
import type { FamilyName } from "../families.js";
import { UsageError } from "./exit.js";
import type { SessionArgs } from "./options.js";

const BUILT_IN_PROFILES = ["default", "mewbo", "mouaif"];

/** An unknown profile is a usage error, not silently the default names. */
export function checkProfile(profile: string | undefined, session?: Session): void {
  if (profile === undefined || BUILT_IN_PROFILES.includes(profile)) return;
  const declared = new Set(session?.granted().flatMap((t) => Object.keys(t.profiles ?? {})) ?? []);
  if (declared.has(profile)) return;
  const known = [...new Set([...BUILT_IN_PROFILES, ...declared])].join(", ");
  throw new UsageError(`unknown --profile ${profile}: expected one of ${known}`);
}

/** TOOLBELT_SEARCH_ENGINE forces an engine; a misspelt one would silently pick the default. */
export function checkEnvironment(): void {
  try {
    readEnv(ENV.TOOLBELT_SEARCH_ENGINE);
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
}

/**
 * Says on stderr, never silently, what an untrusted project's files asked for and did not get, and
 * (given the config) which permission rules allow more than they seem to.
 */
export function reportIgnored(trust: TrustInfo, config?: ToolbeltConfig): void {
  if (trust.ignored.length > 0) {
    const lines = trust.ignored.map((i) => `  ${i.key} (${i.source}): ${i.why}\n`);
    process.stderr.write(
      `toolbelt: ignored ${trust.ignored.length} project setting${trust.ignored.length === 1 ? "" : "s"}: ${trust.reason}\n${lines.join("")}`,
    );
  }
  for (const w of config ? ruleWarnings(config) : [])
    process.stderr.write(`toolbelt: warning: ${w.key} ${JSON.stringify(w.rule)}: ${w.why}\n`);
}

/**
 * The root and workspace of the command line: `--root` (default: the current directory) on this
 * machine and for a container started from an image (a directory here, mounted there); in any other
 * workspace the path there, named once (`ssh:me@box:/srv/app` or `--root /srv/app`). Usage errors
 * for a workspace named wrong.
 */
export async function sessionRoot(args: SessionArgs): Promise<{ root: string; workspace?: string }> {
  if (args.workspace === undefined || args.workspace === "local")
    return { root: path.resolve(args.root ?? ".") };
  const { parseWorkspace } = await import("@toolbelt/workspace");
  let parsed: ReturnType<typeof parseWorkspace>;
  try {
    parsed = parseWorkspace(args.workspace);
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  const { spec, root: named } = parsed;
  if (spec.kind === "docker" && "image" in spec)
    return { root: path.resolve(args.root ?? "."), workspace: args.workspace };
  if (named !== undefined && args.root !== undefined && args.root !== named)
    throw new UsageError(`--workspace names the root ${named} and --root is ${args.root}: give it once`);
  const root = named ?? args.root;
  if (root === undefined || !path.posix.isAbsolute(root))
    throw new UsageError(
      `--workspace ${args.workspace}: name the project's absolute path there, after the target (${spec.kind === "ssh" ? "ssh:user@host:/path" : spec.kind === "docker" ? "docker:NAME:/path" : "k8s:ns/pod:/path"}) or with --root /path`,
    );
  return { root, workspace: args.workspace };
}

/** The session options the command line gives (serve passes them on to each client's session). */
export function sessionOptionsOf(args: SessionArgs) {
  return {
    ...(args.workspace !== undefined ? { workspace: args.workspace } : {}),
    ...(args.config ? { configFile: args.config } : {}),
    ...(args.profile ? { profile: args.profile } : {}),
    ...(args.model ? { model: args.model } : {}),
    ...(args.trust !== undefined ? { trustProject: args.trust } : {}),
    allow: args.allow ?? [],
  };
}

/**
 * Opens the session a command runs in, closed on SIGINT/SIGTERM. Only `run` names `families`: a
 * session of one call with no config needs no other family's keys.
 */
export async function openSession(
  args: SessionArgs,
  options: { families?: readonly FamilyName[]; client?: ClientInfo; plugins?: Plugin[] } = {},
): Promise<Session> {
  const { root, workspace } = await sessionRoot(args);
  const session = await openToolbelt({
    root,
    ...sessionOptionsOf(args),
    ...(workspace !== undefined ? { workspace } : {}),
    ...(options.client ? { client: options.client } : {}),
    ...(options.plugins ? { plugins: options.plugins } : {}),
    ...(options.families ? { families: options.families, familyContributionsOnly: true } : {}),
  });
  try {
    checkProfile(args.profile, session);
  } catch (error) {
    await session.close();
    throw error;
  }
  reportIgnored(session.trust, session.config);
  // Node skips exit handlers on SIGINT/SIGTERM: close the session first so background process
  // groups, language servers and MCP servers do not outlive the CLI.
  const onSignal = (signal: NodeJS.Signals) => {
    void session.close().finally(() => process.exit(signal === "SIGINT" ? 130 : 143));
  };
  process.once("SIGINT", onSignal);
  process.once("SIGTERM", onSignal);
  session.onClose(() => {
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
  });
  return session;
}
