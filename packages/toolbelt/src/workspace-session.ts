import { randomUUID } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, realpathSync, rmSync, statSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { Tool } from "@modelcontextprotocol/sdk/types.js";
import {
  type AnyTool,
  asAnyTool,
  type Checkpoint,
  createSession,
  definePlugin,
  defineTool,
  type EventInput,
  type Payload,
  type Plugin,
  parseConfig,
  type RemoteCheckpoints,
  type Session,
  type ToolAnnotations,
  ToolbeltError,
  type TrustInfo,
  z,
} from "@toolbelt/core";
import { userConfigDir, userConfigFile } from "@toolbelt/core/config-paths";
import {
  mergeConfig,
  projectTrust,
  readConfigFile,
  renderPayload,
  restoreResultSchema,
  UNTRUSTED,
} from "@toolbelt/core/internal";
import type { HostToolbelt, WorkspaceDriver, WorkspaceSpec } from "@toolbelt/workspace";
import { BUILTIN_CONTRIBUTIONS, configContributions } from "./contributions.js";
import { type CliToolbeltOptions, importPlugin } from "./create.js";
import { version } from "./version.js";
import { WorkspaceLink } from "./workspace-link.js";
import {
  type CheckpointsRequest,
  checkpointDiffSchema,
  checkpointListSchema,
  checkpointsSummarySchema,
} from "./workspace-protocol.js";

// A session whose tools run in a workspace elsewhere: the host session binds the workspace's tools
// under their own names and schemas, each call forwarded over the link (workspace-link.ts). Policy,
// sandbox, limits and trust are applied there, by the toolbelt inside; the host adds its own
// settings as a layer that can only tighten, and its approver and person answer what is asked.

/** What a session's workspace is, for whoever holds the session (`workspaceOf`). */
export interface WorkspaceInfo {
  kind: "docker" | "ssh" | "kubernetes";
  /** Names it (`docker container web`, `ssh me@box`). */
  label: string;
  /** The project's root in the workspace. */
  root: string;
  /** How toolbelt is started there, and why that way. */
  toolbelt: { command: string[]; how: string };
}

const workspaces = new WeakMap<Session, WorkspaceInfo>();

/** The workspace a session's tools run in, or undefined for a session on this machine. */
export function workspaceOf(session: Session): WorkspaceInfo | undefined {
  return (
    workspaces.get(session.parent ?? session) ?? (session.parent ? workspaceOf(session.parent) : undefined)
  );
}

/** The source registered tools of a workspace come under. */
const SOURCE = "workspace";

// Events the host session makes itself for each forwarded call (with the same call id) or binding.
const HOST_MADE = new Set(["tool_call", "tool_result", "tools_bound"]);

/** Where Node would find package `name` from directory `from` (its node_modules lookup), real path. */
function packageDirOf(name: string, from: string): string | undefined {
  for (let dir = from; ; dir = path.dirname(dir)) {
    const candidate = path.join(dir, "node_modules", name);
    if (existsSync(path.join(candidate, "package.json"))) return realpathSync(candidate);
    if (path.dirname(dir) === dir) return undefined;
  }
}

function dependenciesOf(dir: string): string[] {
  const manifest = JSON.parse(readFileSync(path.join(dir, "package.json"), "utf8")) as {
    dependencies?: Record<string, string>;
    optionalDependencies?: Record<string, string>;
  };
  return Object.keys({ ...manifest.dependencies, ...manifest.optionalDependencies });
}

/** The parts of this toolbelt a container without one gets mounted (read-only). */
export function hostToolbelt(): HostToolbelt {
  // From src/ (tests) and from dist/ alike: the package's directory is the parent.
  const packageDir = realpathSync(fileURLToPath(new URL("..", import.meta.url)));
  const bin = path.join(packageDir, "dist", "bin.js");
  // Every directory the CLI loads code from: this package, the toolbelt packages it loads, and each of
  // their dependencies where Node finds it. What those need lies beside or beneath them.
  const dirs = [packageDir];
  const queue = [packageDir];
  for (let dir = queue.shift(); dir !== undefined; dir = queue.shift()) {
    for (const name of dependenciesOf(dir)) {
      const found = packageDirOf(name, dir);
      if (!found || dirs.includes(found)) continue;
      dirs.push(found);
      if (name.startsWith("@toolbelt/")) queue.push(found);
    }
  }
  const installRoot = dirs.reduce(commonAncestor);
  if (installRoot === path.parse(installRoot).root)
    throw new ToolbeltError(
      "EWORKSPACE",
      `cannot tell where toolbelt is installed (its packages share no directory but ${installRoot}): use an image with toolbelt installed (docs/workspaces.md)`,
    );
  return { node: realpathSync(process.execPath), bin, installRoot };
}

function commonAncestor(a: string, b: string): string {
  const x = a.split(path.sep);
  const y = b.split(path.sep);
  let i = 0;
  while (i < x.length && i < y.length && x[i] === y[i]) i++;
  return x.slice(0, i).join(path.sep) || path.sep;
}

/**
 * The host's own settings, sent to the workspace as a layer that can only tighten: the user's config
 * folder, `--config`, the SDK's `config`, plan mode. Checked here first, so a broken file is the
 * host's usage error before anything starts.
 */
function hostPolicy(options: CliToolbeltOptions): Record<string, unknown> | undefined {
  let merged: unknown = {};
  const sources: string[] = [];
  if (options.userConfig !== false) {
    const file = userConfigFile(userConfigDir());
    const value = readConfigFile(file, { optional: true });
    if (value !== undefined) {
      merged = mergeConfig(merged, value);
      sources.push(file);
    }
  }
  if (options.configFile) {
    merged = mergeConfig(merged, readConfigFile(path.resolve(options.configFile)));
    sources.push(options.configFile);
  }
  if (options.config) {
    merged = mergeConfig(merged, options.config);
    sources.push("options");
  }
  if (options.mode === "plan") merged = mergeConfig(merged, { agent: { mode: "plan" } });
  parseConfig(merged, sources.join(" + ") || "config", configContributions(), { unknownSections: "allow" });
  const record = merged as Record<string, unknown>;
  return Object.keys(record).length > 0 ? record : undefined;
}

/** The workspace and its root from the option and `root`; EINVAL_INPUT when they disagree or the root is no path. */
async function resolveSpec(options: CliToolbeltOptions): Promise<{ spec: WorkspaceSpec; root: string }> {
  const ws = await import("@toolbelt/workspace");
  const given = options.workspace;
  const { spec, root: named } =
    typeof given === "string"
      ? ws.parseWorkspace(given)
      : { spec: ws.checkWorkspace(given), root: undefined };
  if (named !== undefined && options.root && path.posix.resolve(options.root) !== path.posix.resolve(named))
    throw new ToolbeltError(
      "EINVAL_INPUT",
      `the workspace names the root ${named} and root is ${options.root}: give it once`,
      { details: { field: "root" } },
    );
  const root = named ?? options.root;
  if (spec.kind === "docker" && "image" in spec) {
    // A container from an image gets a directory of this machine: it must be here.
    let real: string;
    try {
      real = realpathSync(path.resolve(root));
    } catch {
      throw new ToolbeltError("ENOENT", `root does not exist: ${root}`, { details: { field: "root" } });
    }
    if (!statSync(real).isDirectory())
      throw new ToolbeltError("ENOTDIR", `root is not a directory: ${root}`, { details: { field: "root" } });
    return { spec, root: real };
  }
  if (!path.posix.isAbsolute(root))
    throw new ToolbeltError(
      "EINVAL_INPUT",
      `the root in the workspace must be an absolute path (got ${JSON.stringify(root)}): name it as ${spec.kind === "ssh" ? "ssh:user@host:/path" : spec.kind === "docker" ? "docker:NAME:/path" : "k8s:ns/pod:/path"} or with root`,
      { details: { field: "root" } },
    );
  return { spec, root: path.posix.normalize(root) };
}

/** `serve --mcp` and its flags, as the toolbelt in the workspace is started. */
function serveArgs(options: CliToolbeltOptions, root: string, trust: boolean | undefined): string[] {
  return [
    "serve",
    "--mcp",
    "--root",
    root,
    ...(options.profile ? ["--profile", options.profile] : []),
    ...(options.model ? ["--model", options.model] : []),
    ...[...(options.allow ?? [])].flatMap((a) => ["--allow", a]),
    ...(trust === true ? ["--trust"] : trust === false ? ["--no-trust"] : []),
  ];
}

/** What the workspace's session reported about trust (its config_ignored), or that it is decided there. */
function trustFrom(events: ReadonlyArray<Record<string, unknown>>): TrustInfo {
  const notice = events.find((e) => e.type === "config_ignored") as
    | { trusted: boolean; reason: string; ignored: TrustInfo["ignored"] }
    | undefined;
  if (notice) return { trusted: notice.trusted, reason: notice.reason, ignored: notice.ignored };
  return { ...UNTRUSTED, reason: "decided in the workspace" };
}

/** An event of the workspace's session, emitted again by the host session (its own envelope). */
function forward(session: Session, event: Record<string, unknown>): void {
  if (HOST_MADE.has(event.type as string)) return;
  const { v: _v, seq: _seq, session: _session, at: _at, ...rest } = event;
  try {
    session.emit(rest as EventInput);
  } catch {
    // A type the host does not know (a plugin installed only in the workspace): not the host's to show.
  }
}

const anyInput = z.record(z.string(), z.unknown());

/** The workspace's bound tools as host tools with the same names, schemas and results. */
function proxies(link: WorkspaceLink, tools: readonly Tool[]): AnyTool[] {
  // The model-facing text the workspace rendered, by payload: render() returns it unchanged.
  const texts = new WeakMap<object, string>();
  const out: AnyTool[] = [];
  for (const tool of tools) {
    try {
      out.push(
        asAnyTool(
          defineTool({
            name: tool.name,
            family: SOURCE,
            // Read-only tools run side by side in a step, as there; the workspace's policy decides
            // what asks, so nothing here is `execute` (which would ask on the host as well).
            access: tool.annotations?.readOnlyHint === true ? "read" : "write",
            description: tool.description ?? tool.name,
            input: anyInput,
            jsonSchema: tool.inputSchema as Record<string, unknown>,
            ...(tool.outputSchema ? { outputJsonSchema: tool.outputSchema as Record<string, unknown> } : {}),
            annotations: annotationsOf(tool),
            async execute(input, ctx) {
              const { payload, text } = await link.call(tool.name, input, ctx.callId, ctx.signal);
              if (text !== undefined) texts.set(payload, text);
              return payload;
            },
            render: (payload: Payload) => texts.get(payload) ?? renderPayload(payload),
          }),
        ),
      );
    } catch {
      // A name the host cannot bind (not a tool name): left out, as the workspace would not send it.
    }
  }
  return out;
}

/**
 * The workspace's checkpoints, through the link: each answer checked against the shape the SDK
 * promises (the workspace is another machine), its store named with the workspace.
 */
function remoteCheckpoints(link: WorkspaceLink): RemoteCheckpoints {
  const ask = async <T>(request: CheckpointsRequest, schema: z.ZodType<T>): Promise<T> => {
    const value = await link.checkpoints(request);
    const parsed = schema.safeParse(value);
    if (!parsed.success)
      throw new ToolbeltError(
        "EWORKSPACE",
        `toolbelt in ${link.label} answered checkpoints ${request.action} with something else than checkpoints: ${parsed.error.issues[0]?.message ?? "not valid"}`,
        { details: { workspace: link.label } },
      );
    return parsed.data;
  };
  return {
    list: () => ask({ action: "list" }, checkpointListSchema) as Promise<Checkpoint[]>,
    diff: (checkpoint) => ask({ action: "diff", checkpoint }, checkpointDiffSchema),
    restore: async (checkpoint, tool) => {
      if (tool !== "checkpoints_restore")
        throw new ToolbeltError(
          "EINVAL_INPUT",
          `a workspace's checkpoints are restored as checkpoints_restore, not as ${tool}`,
        );
      return ask({ action: "restore", checkpoint, tool }, restoreResultSchema);
    },
    summary: async () => {
      const summary = await ask({ action: "summary" }, checkpointsSummarySchema);
      return { ...summary, where: `${link.label}: ${summary.where}` };
    },
  };
}

function annotationsOf(tool: Tool): ToolAnnotations {
  const a = tool.annotations ?? {};
  const out: ToolAnnotations = {};
  if (typeof a.title === "string") out.title = a.title;
  for (const key of ["readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"] as const)
    if (typeof a[key] === "boolean") out[key] = a[key];
  return out;
}

/**
 * Opens a session whose tools run in `options.workspace`, or returns undefined when that is this
 * machine. Throws EINVAL_INPUT for a workspace named wrong, EWORKSPACE for one that cannot be
 * reached or started, leaving nothing behind.
 */
export async function openWorkspaceSession(options: CliToolbeltOptions): Promise<Session | undefined> {
  const { spec, root } = await resolveSpec(options);
  if (spec.kind === "local") return undefined;
  const policy = hostPolicy(options);
  const client = options.client ?? {};
  const id = options.id ?? `s-${randomUUID().slice(0, 8)}`;
  const fromImage = spec.kind === "docker" && "image" in spec;
  const mounted = fromImage && spec.project !== "copy";
  // A project of this machine mounted there is trusted as it is here (toolbelt trust, TOOLBELT_TRUST).
  const trust = options.trustProject ?? (mounted && projectTrust(root).trusted ? true : undefined);
  const { openDriver } = await import("@toolbelt/workspace");
  const driver: WorkspaceDriver = await openDriver(spec, {
    root,
    host: fromImage ? hostToolbelt() : { node: process.execPath, bin: "", installRoot: "" },
    session: id,
  });
  let target: Session | undefined;
  const early: Array<Record<string, unknown>> = [];
  let link: WorkspaceLink | undefined;
  let hostRoot: string | undefined;
  let ownRoot = false;
  try {
    link = new WorkspaceLink({
      driver,
      serveArgs: serveArgs(options, root, trust),
      root,
      request: {
        events: true,
        capabilities: client.capabilities ?? [],
        approve: client.approve !== undefined,
        ...(policy ? { policy } : {}),
      },
      client,
      version: version(),
      onEvent: (event) => {
        if (target) forward(target, event);
        else early.push(event);
      },
      onTools: (tools) => target?.registerTools(SOURCE, proxies(link as WorkspaceLink, tools)),
    });
    await link.connect();
    // The host session needs a directory of its own; a mounted project is the same one here.
    if (mounted && existsSync(root)) hostRoot = root;
    else {
      hostRoot = mkdtempSync(path.join(os.tmpdir(), "toolbelt-workspace-"));
      ownRoot = true;
    }
    const opened = link;
    const plugins: Plugin[] = [];
    for (const item of options.plugins ?? [])
      plugins.push(typeof item === "string" ? await importPlugin(item, process.cwd()) : item);
    const info: WorkspaceInfo = { kind: spec.kind, label: driver.label, root, toolbelt: driver.toolbelt };
    const removeRoot = ownRoot ? hostRoot : undefined;
    const session = await createSession({
      root: hostRoot,
      // Nothing runs here but the link: the workspace's toolbelt binds, asks and searches tools.
      config: { agent: { tool_search: "off" } },
      client,
      ...(options.model ? { model: options.model } : {}),
      ...(options.hooks ? { hooks: options.hooks } : {}),
      ...(options.mode ? { mode: options.mode } : {}),
      id,
      trust: trustFrom(early),
      // The checkpoints are the workspace's: recorded by its toolbelt, listed and restored there.
      checkpoints: remoteCheckpoints(opened),
      contributions: BUILTIN_CONTRIBUTIONS,
      plugins: [
        ...plugins,
        definePlugin({
          name: "workspace",
          tools: [],
          setup(s) {
            if (!s.isRoot) return;
            workspaces.set(s, info);
            target = s;
            s.registerTools(SOURCE, proxies(opened, opened.tools));
            for (const event of early.splice(0)) forward(s, event);
            s.onClose(async () => {
              await opened.close().catch(() => {});
              await driver.close().catch(() => {});
              if (removeRoot) rmSync(removeRoot, { recursive: true, force: true });
            });
          },
        }),
      ],
    });
    return session;
  } catch (error) {
    await link?.close().catch(() => {});
    await driver.close().catch(() => {});
    if (ownRoot && hostRoot) rmSync(hostRoot, { recursive: true, force: true });
    throw error;
  }
}

type Check = { family: string; name: string; status: string; detail: string };

/**
 * `toolbelt doctor --workspace …`: whether the workspace can be reached, how toolbelt gets in (its
 * own, or the host's mounted), and what toolbelt's doctor reports there (its sandbox inside a
 * container included). Leaves nothing behind: a container or pod made for it is removed.
 */
export async function workspaceDoctor(options: CliToolbeltOptions): Promise<Check[]> {
  const checks: Check[] = [];
  let spec: WorkspaceSpec;
  let root: string;
  try {
    ({ spec, root } = await resolveSpec(options));
  } catch (error) {
    return [{ family: "workspace", name: "spec", status: "unavailable", detail: (error as Error).message }];
  }
  if (spec.kind === "local") return checks;
  const fromImage = spec.kind === "docker" && "image" in spec;
  const { openDriver } = await import("@toolbelt/workspace");
  let driver: WorkspaceDriver;
  try {
    driver = await openDriver(spec, {
      root,
      host: fromImage ? hostToolbelt() : { node: process.execPath, bin: "", installRoot: "" },
      session: `doctor-${randomUUID().slice(0, 8)}`,
    });
  } catch (error) {
    return [
      { family: "workspace", name: spec.kind, status: "unavailable", detail: (error as Error).message },
    ];
  }
  try {
    checks.push({ family: "workspace", name: spec.kind, status: "ok", detail: `${driver.label} answers` });
    checks.push({
      family: "workspace",
      name: "toolbelt",
      status: "ok",
      detail: `${driver.toolbelt.how}: ${driver.toolbelt.command.join(" ")}`,
    });
    const trust =
      options.trustProject === true ? ["--trust"] : options.trustProject === false ? ["--no-trust"] : [];
    const result = await driver.run(
      [...driver.toolbelt.command, "doctor", "--format", "json", "--root", root, ...trust],
      root,
    );
    let remote: Check[] | undefined;
    try {
      remote = JSON.parse(result.stdout) as Check[];
    } catch {
      remote = undefined;
    }
    if (result.code !== 0 || !Array.isArray(remote))
      checks.push({
        family: "workspace",
        name: "doctor",
        status: "unavailable",
        detail: `toolbelt doctor did not run there (exit code ${result.code}): ${(result.stderr || result.stdout).split("\n").slice(-5).join(" | ")}`,
      });
    else for (const c of remote) checks.push({ ...c, family: `workspace:${c.family}` });
  } finally {
    await driver.close().catch(() => {});
  }
  return checks;
}
