import { createRequire } from "node:module";

/**
 * A CommonJS `require` for the module at `url()`, made on the first call. Modules that load a
 * dependency only when a call needs it (node:worker_threads for regexes, node:child_process for
 * ripgrep, picomatch for globs) keep even the making of their `require` out of load time: in the
 * one-shot bundle, `import.meta.url` finds the package's directory on disk, about a millisecond each.
 */
export function requireLater(url: () => string): (id: string) => unknown {
  let require: NodeJS.Require | undefined;
  return (id) => {
    require ??= createRequire(url());
    return require(id);
  };
}

const requireBuiltin = requireLater(() => import.meta.url);

/** node:crypto, loaded on first use: about 3 ms of a cold start on Node 20, which a one-shot read never needs. */
export function nodeCrypto(): typeof import("node:crypto") {
  return requireBuiltin("node:crypto") as typeof import("node:crypto");
}
