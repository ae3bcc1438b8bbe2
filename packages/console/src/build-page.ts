// Builds the console page: the browser app bundled by esbuild and inlined with its stylesheet into
// one HTML document, so the server hands out a single string and the page fetches nothing else.
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";

/** The part of esbuild's API this needs; passed in so that only the build imports esbuild. */
export type EsbuildLike = {
  buildSync(options: Record<string, unknown>): { outputFiles?: Array<{ text: string }> };
};

export type BuildPageOptions = {
  esbuild: EsbuildLike;
  /** The package's `src` directory. */
  srcDir: string;
  minify?: boolean;
};

function sha256(text: string): string {
  return createHash("sha256").update(text, "utf8").digest("base64");
}

/** Inline script and style text must not close their element early. */
function inlineSafe(text: string, tag: "script" | "style"): string {
  return text.replace(new RegExp(`</(${tag})`, "gi"), "<\\/$1").replace(/<!--/g, "<\\!--");
}

export function buildConsolePage(options: BuildPageOptions): string {
  const result = options.esbuild.buildSync({
    entryPoints: [join(options.srcDir, "app", "main.ts")],
    bundle: true,
    write: false,
    format: "iife",
    platform: "browser",
    target: ["es2020"],
    minify: options.minify ?? true,
    legalComments: "none",
    charset: "utf8",
    // Core's index pulls Node modules (fs, crypto); the page needs only the text format.
    alias: {
      "@toolbelt/core": join(options.srcDir, "..", "..", "core", "src", "text-format.ts"),
      // The route table and wire shapes only: no Node modules.
      "@toolbelt/bridge/wire": join(options.srcDir, "..", "..", "bridge", "src", "wire.ts"),
    },
    logLevel: "silent",
  });
  const js = inlineSafe(result.outputFiles?.[0]?.text ?? "", "script");
  const css = inlineSafe(readFileSync(join(options.srcDir, "app", "styles.css"), "utf8"), "style");
  // Only this script and this stylesheet may run; the page talks to its own origin only.
  const csp = [
    "default-src 'none'",
    `script-src 'sha256-${sha256(js)}'`,
    `style-src 'sha256-${sha256(css)}'`,
    "img-src data:",
    "connect-src 'self'",
    "base-uri 'none'",
    "form-action 'none'",
  ].join("; ");
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="${csp}">
<meta name="referrer" content="no-referrer">
<title>toolbelt console</title>
<style>${css}</style>
</head>
<body>
<div id="app"></div>
<script>${js}</script>
</body>
</html>
`;
}
