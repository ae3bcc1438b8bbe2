// Refreshes docs/screenshots from a real session: the console e2e suite drives the built
// `toolbelt serve --http` in headless chromium and, with TOOLBELT_CONSOLE_SCREENSHOTS set, saves what
// the page shows along the way. A docs step, not a test: run it after `npm run build`.
import { spawnSync } from "node:child_process";
import { statSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const repo = fileURLToPath(new URL("../../", import.meta.url));
const dir = path.join(repo, "docs/screenshots");
const shots = ["console-session.png", "console-panel.png", "console-question.png", "console-approval.png"];
const started = Date.now();

const run = spawnSync(
  process.execPath,
  [path.join(repo, "node_modules/vitest/vitest.mjs"), "run", "packages/console/test/console-e2e.test.ts"],
  { cwd: repo, stdio: "inherit", env: { ...process.env, TOOLBELT_CONSOLE_SCREENSHOTS: dir } },
);
if (run.status !== 0) process.exit(run.status ?? 1);

// The suite skips itself without a browser; then nothing was written, and that must not look like success.
const stale = shots.filter((name) => {
  try {
    return statSync(path.join(dir, name)).mtimeMs < started;
  } catch {
    return true;
  }
});
if (stale.length > 0) {
  console.error(
    `not refreshed: ${stale.join(", ")} (is chromium installed? the console suite says why it skipped)`,
  );
  process.exit(1);
}
console.log(`refreshed ${shots.length} screenshots in docs/screenshots`);
