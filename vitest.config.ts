import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

const pkg = (name: string) => fileURLToPath(new URL(`./packages/${name}/src/index.ts`, import.meta.url));
const contrib = (name: string) =>
  fileURLToPath(new URL(`./packages/${name}/src/contrib.ts`, import.meta.url));

// Unit tests run against src (no build needed); e2e tests spawn the built bin.
export default defineConfig({
  resolve: {
    // Subpaths first: an alias also matches "NAME/…", so "@toolbelt/shell" would swallow its /contrib.
    alias: {
      "@toolbelt/shell/contrib": contrib("shell"),
      "@toolbelt/edit/contrib": contrib("edit"),
      "@toolbelt/files/contrib": contrib("files"),
      "@toolbelt/lsp/contrib": contrib("lsp"),
      "@toolbelt/mcp/contrib": contrib("mcp"),
      "@toolbelt/projects/contrib": contrib("projects"),
      "@toolbelt/ui/contrib": contrib("ui"),
      "@toolbelt/bridge/wire": fileURLToPath(new URL("./packages/bridge/src/wire.ts", import.meta.url)),
      "@toolbelt/core/internal": fileURLToPath(new URL("./packages/core/src/internal.ts", import.meta.url)),
      "@toolbelt/core/config-paths": fileURLToPath(
        new URL("./packages/core/src/config-paths.ts", import.meta.url),
      ),
      "@toolbelt/core": pkg("core"),
      "@toolbelt/ai-sdk": pkg("ai-sdk"),
      "@toolbelt/files": pkg("files"),
      "@toolbelt/edit": pkg("edit"),
      "@toolbelt/shell": pkg("shell"),
      "@toolbelt/lsp": pkg("lsp"),
      "@toolbelt/ui": pkg("ui"),
      "@toolbelt/projects": pkg("projects"),
      "@toolbelt/bridge": pkg("bridge"),
      "@toolbelt/console": pkg("console"),
      "@toolbelt/mcp": pkg("mcp"),
      "@toolbelt/toolbelt": pkg("toolbelt"),
      "@toolbelt/workspace": pkg("workspace"),
      "@toolbelt/plugin-git": fileURLToPath(new URL("./plugins/plugin-git/src/index.ts", import.meta.url)),
    },
  },
  test: {
    include: [
      "packages/*/src/**/*.test.ts",
      "plugins/*/src/**/*.test.ts",
      "packages/*/test/**/*.test.ts",
      "runtime-tests/**/*.test.ts",
      "examples/*/test/**/*.test.ts",
      "test-support/**/*.test.ts",
    ],
    testTimeout: 30000,
    hookTimeout: 60000,
    pool: "forks",
  },
});
