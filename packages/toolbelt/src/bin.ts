#!/usr/bin/env node
import { readFileSync } from "node:fs";

// A reader that stops early (`toolbelt tools --format names | head -3`) closes the pipe: that is
// not an error, so the CLI stops quietly instead of printing a stack trace.
for (const stream of [process.stdout, process.stderr]) {
  stream.on("error", (error: NodeJS.ErrnoException) => {
    if (error.code === "EPIPE") process.exit(process.exitCode ?? 0);
    throw error;
  });
}

// `--version` answers before anything heavy loads: it is what scripts call to probe the install.
const argv = process.argv.slice(2);
if (argv.length === 1 && (argv[0] === "--version" || argv[0] === "-v")) {
  const pkg = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as {
    version: string;
  };
  process.stdout.write(`${pkg.version}\n`);
} else {
  const { main } = await import("./cli.js");
  process.exitCode = await main(argv);
}
