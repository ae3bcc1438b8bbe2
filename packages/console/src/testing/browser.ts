// Starts Debian's chromium through playwright-core for the console's tests, with a fresh profile.
import { existsSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type BrowserContext, chromium } from "playwright-core";

export const CHROMIUM_PATH = process.env.TOOLBELT_CHROMIUM ?? "/usr/bin/chromium";

/** Why browser tests cannot run here, or undefined when they can. */
export function browserSkipReason(): string | undefined {
  if (!existsSync(CHROMIUM_PATH)) {
    return `${CHROMIUM_PATH} is missing (install Debian's chromium: apt-get install -y chromium)`;
  }
  return undefined;
}

export type TestBrowser = { context: BrowserContext; close(): Promise<void> };

export async function launchBrowser(): Promise<TestBrowser> {
  const userDataDir = await mkdtemp(join(tmpdir(), "toolbelt-console-chromium-"));
  const context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: CHROMIUM_PATH,
    headless: true,
    viewport: { width: 1200, height: 800 },
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
  });
  return {
    context,
    async close() {
      await context.close().catch(() => {});
      await rm(userDataDir, { recursive: true, force: true });
    },
  };
}
