import { composeConfigSchema } from "./config.js";
import type { ConfigContribution, Contributions, EventContribution } from "./contributions.js";
import { composeEventSchema } from "./events.js";
import type { Plugin } from "./plugin.js";

/** Everything a session's plugins and extra contributions add, merged once per session. */
export interface GatheredContributions {
  readonly config: readonly ConfigContribution[];
  readonly events: readonly EventContribution[];
  readonly toolKeys: readonly string[];
  readonly chooseEditBackend: Contributions["chooseEditBackend"];
  readonly parseCommandLine: Contributions["parseCommandLine"];
}

/**
 * Merges the plugins' and the extra contributions and composes the config and event schemas right
 * away, so a key or event two owners claim fails the session's start, not its first use.
 */
export function gatherContributions(
  plugins: readonly Plugin[],
  extra: readonly Contributions[] = [],
): GatheredContributions {
  const all = [...extra, ...plugins.map((p) => p.contributes).filter((c) => c !== undefined)];
  const config = [...new Set(all.flatMap((c) => c.config ?? []))];
  const events = [...new Set(all.flatMap((c) => c.events ?? []))];
  composeConfigSchema(config);
  composeEventSchema(events);
  return {
    config,
    events,
    toolKeys: [...new Set(all.flatMap((c) => c.toolKeys ?? []))],
    chooseEditBackend: all.find((c) => c.chooseEditBackend)?.chooseEditBackend,
    parseCommandLine: all.find((c) => c.parseCommandLine)?.parseCommandLine,
  };
}
