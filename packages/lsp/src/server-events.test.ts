import path from "node:path";
import { fileURLToPath } from "node:url";
import { createSession, definePlugin, type EventOf, type Session } from "@toolbelt/core";
import { afterEach, describe, expect, it } from "vitest";
import { makeProject } from "./__fixtures__/project.js";
import { createLspFamily, LspManager, lspConfig } from "./index.js";

// The lsp_server events a server's start sends, seen as an SDK user sees them (session.on), with a
// real server process (the push fixture) and a command that cannot start.

const PUSH_SERVER = fileURLToPath(new URL("./__fixtures__/push-server.mjs", import.meta.url));

const open: Array<{ session: Session; cleanup: () => void }> = [];
afterEach(async () => {
  for (const { session, cleanup } of open.splice(0)) {
    await session.close();
    cleanup();
  }
});

function fixtureConfig(command: string, args: string[]) {
  return {
    lsp: {
      fixture: {
        command,
        args,
        extensions: [".txt"],
        env: { PUSH_FIXTURE_MODE: "staged", PUSH_FIXTURE_PLAIN: "1" },
      },
    },
  };
}

async function start(command: string, args: string[]) {
  const { root, cleanup } = makeProject({ "notes.txt": "fine\n" });
  const session = await createSession({
    root,
    config: fixtureConfig(command, args),
    plugins: [createLspFamily()],
  });
  open.push({ session, cleanup });
  // The order of everything the session tells, to place the server's start inside the call.
  const seen: Array<{ type: string; server?: EventOf<"lsp_server"> }> = [];
  session.on("*", (e) => seen.push(e.type === "lsp_server" ? { type: e.type, server: e } : { type: e.type }));
  return { session, root, seen };
}

describe("lsp_server events", () => {
  it("tells a server's start (starting, then ready) inside the call that needed it, and only once", async () => {
    const { session, root, seen } = await start(process.execPath, [PUSH_SERVER]);
    const out = await session.call("lsp_diagnostics", { path: "notes.txt" });
    expect(out.kind).not.toBe("error");
    const types = seen.map((e) => e.type).filter((t) => t !== "tools_bound");
    expect(types).toEqual(["tool_call", "lsp_server", "lsp_server", "tool_result"]);
    const [starting, ready] = seen.flatMap((e) => (e.server ? [e.server] : []));
    expect(starting).toMatchObject({ server: "fixture", root, state: "starting" });
    expect(starting?.duration_ms).toBeUndefined();
    expect(ready).toMatchObject({ server: "fixture", root, state: "ready" });
    expect(ready?.duration_ms).toBeGreaterThanOrEqual(0);
    seen.length = 0;
    await session.call("lsp_diagnostics", { path: "notes.txt" });
    expect(seen.map((e) => e.type)).not.toContain("lsp_server");
  });

  it("tells a start that failed, with why", async () => {
    const { session, seen } = await start("/nonexistent/toolbelt-no-such-server", []);
    const out = await session.call("lsp_diagnostics", { path: "notes.txt" });
    expect(out).toMatchObject({ kind: "error" });
    const states = seen.flatMap((e) => (e.server ? [e.server] : []));
    expect(states.map((s) => s.state)).toEqual(["starting", "failed"]);
    expect(states[1]?.error).toBeTruthy();
    expect(String((out as { message?: unknown }).message)).toContain(states[1]?.error ?? "?");
  });

  it("still starts a server for a manager over a session that does not know the event", async () => {
    const { root, cleanup } = makeProject({ "notes.txt": "fine\n" });
    // The lsp config section without the family's events: emitting lsp_server would be refused.
    const configOnly = definePlugin({ name: "lsp-config", tools: [], contributes: { config: [lspConfig] } });
    const session = await createSession({
      root,
      config: fixtureConfig(process.execPath, [PUSH_SERVER]),
      plugins: [configOnly],
    });
    open.push({ session, cleanup });
    const manager = new LspManager({}, session);
    try {
      const backend = await manager.backendFor(root, session.config, path.join(root, "notes.txt"));
      expect(backend.label).toContain("fixture");
    } finally {
      await manager.closeAll();
    }
  });
});
