import { mkdtempSync, realpathSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { composeConfigSchema, parseConfig } from "./config.js";
import { mergeLayers } from "./config-sources.js";
import { DROP, defineBuiltinEvents, defineConfigSection, defineEvents, trustRules } from "./contributions.js";
import { composeEventSchema, EventStream, eventJsonSchema } from "./events.js";
import { definePlugin } from "./plugin.js";
import { createSession, Session, type SessionOptions } from "./session.js";

const dirs: string[] = [];
function tempRoot(): string {
  const dir = realpathSync(mkdtempSync(path.join(os.tmpdir(), "tb-contrib-")));
  dirs.push(dir);
  return dir;
}
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function failure(fn: () => unknown): Error & { code?: string } {
  try {
    fn();
  } catch (error) {
    return error as Error & { code?: string };
  }
  throw new Error("expected a failure");
}

const git = defineConfigSection({
  owner: "plugin-demo",
  keys: {
    demo: {
      schema: z
        .strictObject({ max_lines: z.number().int().positive().default(10) })
        .default({ max_lines: 10 }),
      trust: trustRules.neutral,
    },
    "agent.demo_mode": { schema: z.enum(["a", "b"]).optional(), trust: trustRules.neutral },
  },
});

describe("config composition", () => {
  it("validates a contributed section, with its defaults, and reads it typed", () => {
    const config = parseConfig({ demo: { max_lines: 3 }, agent: { demo_mode: "b" } }, "config", [git]);
    expect(git.read(config)).toEqual({ demo: { max_lines: 3 }, demo_mode: "b" });
    expect(git.read(parseConfig({}, "config", [git])).demo).toEqual({ max_lines: 10 });
    const bad = failure(() => parseConfig({ demo: { max_lines: -1 } }, "app.json", [git]));
    expect(bad.message).toMatch(/invalid app\.json: demo\.max_lines/);
  });

  it("still refuses unknown keys, naming them, at every level", () => {
    const error = failure(() =>
      parseConfig({ demo: { max_line: 3 }, agent: { demo_mod: "a" }, colour: 1 }, "config", [git]),
    );
    expect(error.code).toBe("EINVAL_CONFIG");
    expect(error.message).toContain("demo.max_line");
    expect(error.message).toContain("agent.demo_mod");
    expect(error.message).toContain("colour");
  });

  it("refuses a key two owners claim, or one core owns, naming both", () => {
    const again = defineConfigSection({ owner: "other", keys: { demo: { schema: z.number() } } });
    const twice = failure(() => composeConfigSchema([git, again]));
    expect(twice.code).toBe("EPLUGIN");
    expect(twice.message).toMatch(/config key demo is contributed by both plugin-demo and other/);
    const core = defineConfigSection({ owner: "x", keys: { "agent.mode": { schema: z.string() } } });
    expect(failure(() => composeConfigSchema([core])).message).toMatch(/agent\.mode .* both core and x/);
    const field = defineConfigSection({ owner: "y", keys: { "tools.search.mode": { schema: z.string() } } });
    expect(failure(() => composeConfigSchema([field])).message).toMatch(/tools\.search\.mode .* core and y/);
    // The same contribution reached twice (a family and its gate) is not a clash.
    expect(() => composeConfigSchema([git, git])).not.toThrow();
  });

  it("refuses a malformed key name when it is declared", () => {
    expect(() => defineConfigSection({ owner: "z", keys: { "tools.x": { schema: z.string() } } })).toThrow(
      /agent\.NAME, tools\.TOOL\.FIELD or a top-level NAME/,
    );
  });

  it("applies a contribution's trust rule to an untrusted layer", () => {
    const servers = defineConfigSection({
      owner: "srv",
      keys: {
        servers: {
          schema: z.record(z.string(), z.string()).default({}),
          trust: trustRules.eachEntry("starts it"),
        },
        "agent.level": {
          schema: z.number().optional(),
          trust: (value, ctx) => {
            if (typeof value === "number" && value <= ((ctx.current as number | undefined) ?? 1))
              return value;
            ctx.ignore(ctx.key, "raises the level");
            return DROP;
          },
        },
      },
    });
    const { config, ignored } = mergeLayers(
      [
        { value: { agent: { level: 4 } }, source: "user", trusted: true },
        { value: { servers: { evil: "rm -rf" }, agent: { level: 9 } }, source: "project", trusted: false },
      ],
      [servers],
    );
    expect(servers.read(config)).toEqual({ servers: {}, level: 4 });
    expect(ignored.map((i) => `${i.key}: ${i.why}`)).toEqual([
      "servers.evil: starts it",
      "agent.level: raises the level",
    ]);
  });
});

describe("event composition", () => {
  const pluginEvents = defineEvents("plugin-demo", { status: { branch: z.string() } });

  it("namespaces plugin events and validates them like core's", () => {
    expect(Object.keys(pluginEvents.events)).toEqual(["plugin-demo/status"]);
    const stream = new EventStream("s", [pluginEvents]);
    const event = stream.emit({ type: "plugin-demo/status", branch: "main" } as never);
    expect(event).toMatchObject({ type: "plugin-demo/status", seq: 0, v: 1 });
    expect(() => stream.emit({ type: "plugin-demo/status", branch: 3 } as never)).toThrow(
      /^a "plugin-demo\/status" event that does not match its declaration:\n.*expected string, received number\n\s+→ at branch$/,
    );
    expect(() => stream.emit({ type: "unknown_thing" } as never)).toThrow(
      'the event type "unknown_thing", which nothing declares: a plugin declares its events with defineEvents("OWNER", { unknown_thing: { ...fields } }) in its contributes.events',
    );
    expect(JSON.stringify(eventJsonSchema([pluginEvents]))).toContain('"plugin-demo/status"');
  });

  it("refuses an event type two owners claim, and a plugin event outside its namespace", () => {
    const shadow = defineBuiltinEvents("rogue", { tool_result: { x: z.string() } });
    expect(() => composeEventSchema([shadow])).toThrow(
      /event tool_result is contributed by both core and rogue/,
    );
    const a = defineBuiltinEvents("a", { thing: {} });
    const b = defineBuiltinEvents("b", { thing: {} });
    expect(() => composeEventSchema([a, b])).toThrow(/both a and b/);
    expect(() => defineEvents("Bad Name", { x: {} })).toThrow(/OWNER\/NAME/);
  });
});

describe("a session composes its plugins' contributions", () => {
  const plugin = definePlugin({
    name: "plugin-demo",
    tools: [],
    contributes: { config: [git], events: [defineEvents("plugin-demo", { ping: { n: z.number() } })] },
  });

  it("validates a raw config against them and emits their events", async () => {
    const session = await createSession({
      root: tempRoot(),
      plugins: [plugin],
      config: { demo: { max_lines: 2 } } as SessionOptions["config"],
    });
    expect(git.read(session.config).demo).toEqual({ max_lines: 2 });
    expect(session.emit({ type: "plugin-demo/ping", n: 1 } as never).type).toBe("plugin-demo/ping");
    await expect(
      createSession({ root: tempRoot(), config: { demo: {} } as SessionOptions["config"] }),
    ).rejects.toThrow(/unknown key demo/);
  });

  it("fails at startup when two plugins claim one key", async () => {
    const rival = definePlugin({
      name: "rival",
      tools: [],
      contributes: {
        config: [defineConfigSection({ owner: "rival", keys: { demo: { schema: z.unknown() } } })],
      },
    });
    await expect(createSession({ root: tempRoot(), plugins: [plugin, rival] })).rejects.toThrow(
      /config key demo is contributed by both plugin-demo and rival/,
    );
  });
});

describe("Session surface", () => {
  it("takes no fork internals from callers: parent, held and locks are ignored", async () => {
    const parent = await createSession({ root: tempRoot() });
    const sneaky = { root: tempRoot(), parent, held: new Set<string>(), cwd: "/" } as SessionOptions;
    const session = new Session(sneaky);
    expect(session.parent).toBeUndefined();
    expect(session.isRoot).toBe(true);
    expect(session.cwd).toBe(session.root);
    const child = await parent.fork();
    expect(child.parent).toBe(parent);
    expect(child.id).toBe(`${parent.id}.1`);
  });

  it("runs plugin setup once however often setup() is called", async () => {
    let runs = 0;
    const counting = definePlugin({ name: "count", tools: [], setup: () => void runs++ });
    const session = await createSession({ root: tempRoot(), plugins: [counting] });
    await Promise.all([session.setup(), session.setup()]);
    await session.setup();
    expect(runs).toBe(1);
  });
});
