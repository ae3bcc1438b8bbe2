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

/** The session options the command line gives (serve passes them on to each client's session). */
export function sessionOptionsOf(args: SessionArgs) {
  return {
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
  const session = await openToolbelt({
    root: path.resolve(args.root),
    ...sessionOptionsOf(args),
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
