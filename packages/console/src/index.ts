// The public API of @toolbelt/console: the page `toolbelt serve --http` serves at GET /.
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import { buildConsolePage, type EsbuildLike } from "./build-page.js";

// Replaced with the built page by the package build (tsup `define`).
declare const __TOOLBELT_CONSOLE_PAGE__: string | undefined;

let built: string | undefined;

/**
 * The console as one self-contained HTML document (script and styles inline, nothing fetched from
 * elsewhere). It reads its token from the address (`#token=…` or `?token=…`) and talks to the
 * `/api/sessions` routes of the server that served it.
 */
export function consolePage(): string {
  if (typeof __TOOLBELT_CONSOLE_PAGE__ === "string") return __TOOLBELT_CONSOLE_PAGE__;
  // Running from source (tests through the workspace aliases): bundle on first use.
  built ??= buildConsolePage({
    esbuild: createRequire(import.meta.url)("esbuild") as EsbuildLike,
    srcDir: fileURLToPath(new URL(".", import.meta.url)),
  });
  return built;
}
