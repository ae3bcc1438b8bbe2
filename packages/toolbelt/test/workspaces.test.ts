import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { type Session, ToolbeltError } from "@toolbelt/core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { lacks } from "../../../test-support/capability.js";
import { createToolbelt } from "../src/index.js";
import { hostToolbelt } from "../src/workspace-session.js";
import { assertBuilt, BIN, cli, jsonLines, mcpCall, tempRoot } from "./cli-harness.js";
import { until } from "./mcp-raw.js";
import {
  allSessionContainers,
  BASE_IMAGE,
  containersOf,
  dockerMissing,
  engine,
  execIn,
  type Sshd,
  sshdMissing,
  startSshd,
  startToolbeltContainer,
} from "./workspace-fixtures.js";

// Workspaces end to end: the built CLI and the SDK with their tools running in a Docker container
// (started from a plain Debian image with the host's Node and toolbelt mounted read-only) and on an
// SSH host (a test-owned sshd on loopback), through real daemons, real ssh and real toolbelt inside.

const skipDocker = lacks("docker", await dockerMissing());
const skipSsh = lacks("sshd", sshdMissing());

const DOCKER_HOST = process.env.TOOLBELT_TEST_DOCKER_HOST ?? "";

interface Target {
  name: string;
  /** The CLI's --workspace (and --root) for a project at `root`, and the environment it needs. */
  cliArgs(root: string): string[];
  env(): NodeJS.ProcessEnv;
  /** The SDK's workspace option. */
  spec(): Record<string, unknown>;
}

const docker: Target = {
  name: "docker",
  cliArgs: (root) => ["--workspace", `docker-image:${BASE_IMAGE}`, "--root", root],
  env: () => ({ DOCKER_HOST }),
  spec: () => ({ kind: "docker", image: BASE_IMAGE, docker: DOCKER_HOST }),
};

let sshd: Sshd | undefined;
const ssh: Target = {
  name: "ssh",
  cliArgs: (root) => ["--workspace", `ssh:${sshd?.host}:${root}`],
  // The user's own ssh: here one that reads the test's config, first on PATH.
  env: () => ({ PATH: `${sshd?.bin}:${process.env.PATH}` }),
  spec: () => ({ kind: "ssh", destination: sshd?.host, sshArgs: ["-F", sshd?.config] }),
};

function project(): string {
  const root = tempRoot("tb-ws-");
  writeFileSync(path.join(root, "a.txt"), "alpha\nneedle one\n");
  mkdirSync(path.join(root, "src"));
  writeFileSync(path.join(root, "src", "b.ts"), "export const needle = 2;\n");
  return root;
}

type Line = { id: string; tool: string; result: Record<string, unknown> };

function suite(target: Target) {
  it(`${target.name}: the built CLI reads, searches, writes, edits and runs the shell there, sandboxed (exec, one session)`, async () => {
    const root = project();
    // Outside the project, in a folder root may write to (in the container, and on the SSH host,
    // which is this machine): only the sandbox stands between the command and it.
    const outside = `/root/tb-ws-outside-${process.pid}-${Date.now()}`;
    const calls = [
      { id: "r", tool: "read_file", input: { path: "a.txt" } },
      { id: "s", tool: "search_files", input: { query: "needle" } },
      { id: "w", tool: "write_file", input: { path: "new.txt", content: "made there\n" } },
      { id: "e", tool: "edit_file", input: { path: "a.txt", old_text: "alpha", new_text: "omega" } },
      { id: "x", tool: "shell", input: { command: "cat new.txt; echo in-$(pwd)" } },
      { id: "o", tool: "read_file", input: { path: "/etc/hostname" } },
      // The shell's Landlock sandbox applies there too: outside the project nothing is writable.
      { id: "y", tool: "shell", input: { command: `echo escaped > ${outside}` } },
    ];
    const result = await cli(["exec", ...target.cliArgs(root), "--allow", "shell", "--no-fail-on-error"], {
      input: calls.map((c) => JSON.stringify(c)).join("\n"),
      env: target.env(),
      timeoutMs: 75_000,
    });
    expect(result.code, result.stderr).toBe(0);
    const lines = new Map(jsonLines(result.stdout).map((l) => [(l as Line).id, (l as Line).result]));
    expect(JSON.stringify(lines.get("r"))).toContain("needle one");
    const found = JSON.stringify(lines.get("s"));
    expect(found).toContain("a.txt");
    expect(found).toContain("src/b.ts");
    expect(lines.get("w")?.kind).not.toBe("error");
    expect(lines.get("e")?.kind).not.toBe("error");
    const shell = JSON.stringify(lines.get("x"));
    expect(shell).toContain("made there");
    expect(shell).toContain(`in-${root}`);
    // A path outside the project is refused there, as here (the workspace's own policy).
    expect(lines.get("o")).toMatchObject({ kind: "error", code: "EPATH_ESCAPE" });
    const escaped = lines.get("y") as {
      exit_code?: number;
      sandbox_denied?: Array<{ path: string; why: string }>;
    };
    expect(escaped.exit_code).not.toBe(0);
    // Reads are confined too (the default), so /root is neither readable nor writable there.
    expect(escaped.sandbox_denied).toContainEqual({ path: outside, why: "outside_readable" });
    expect(existsSync(outside)).toBe(false);
    // The project is this machine's directory (mounted, or the same host): the changes are here.
    expect(readFileSync(path.join(root, "new.txt"), "utf8")).toBe("made there\n");
    expect(readFileSync(path.join(root, "a.txt"), "utf8")).toBe("omega\nneedle one\n");
    if (target === docker) expect(await allSessionContainers()).toEqual([]);
  });

  it(`${target.name}: the SDK session binds the same tools as a local one, asks the host's approver, and the host's config only tightens`, async () => {
    const root = project();
    const local = await createToolbelt({ root, userConfig: false });
    const localTools = local.bind();
    await local.close();
    const asked: string[] = [];
    let allow = false;
    const events: string[] = [];
    const session: Session = await createToolbelt({
      root,
      userConfig: false,
      workspace: target.spec() as never,
      // The host denies write_file: the workspace, which would allow it, must not.
      config: { tools: { write_file: { mode: "deny" } } },
      client: {
        approve: async (prompt) => {
          asked.push(`${prompt.tool}: ${prompt.summary}`);
          return allow;
        },
      },
    });
    try {
      session.on("*", (e) => events.push(e.type));
      // The same names, descriptions and schemas as a session on this machine.
      expect(session.bind()).toEqual(localTools);
      const read = await session.call("read_file", { path: "a.txt" });
      expect(JSON.stringify(read)).toContain("needle one");
      const denied = await session.call("shell", { command: "touch ran.txt" });
      expect(denied).toMatchObject({ kind: "error" });
      expect(asked).toHaveLength(1);
      expect(asked[0]).toContain("shell");
      expect(existsSync(path.join(root, "ran.txt"))).toBe(false);
      allow = true;
      const ran = await session.call("shell", { command: "touch ran.txt && echo done" });
      expect(JSON.stringify(ran)).toContain("done");
      expect(existsSync(path.join(root, "ran.txt"))).toBe(true);
      expect(asked).toHaveLength(2);
      const write = await session.call("write_file", { path: "w.txt", content: "x" });
      expect(write).toMatchObject({ kind: "error", code: "EDENIED" });
      expect(existsSync(path.join(root, "w.txt"))).toBe(false);
      // The workspace's own events reach the host (its approval events), besides the host's tool_call.
      expect(events).toContain("tool_call");
      expect(events.some((t) => t.startsWith("approval"))).toBe(true);
      // The check below sees toolbelt serving there while the session is open.
      if (target === ssh) expect(servingRoot(root)).toHaveLength(1);
    } finally {
      await session.close();
    }
    // Nothing is left running there: the container is gone, or no toolbelt serves this root any more.
    if (target === docker) expect(await allSessionContainers()).toEqual([]);
    else expect(servingRoot(root)).toEqual([]);
  });

  it(`${target.name}: the host SDK's checkpoints list, diff and restore the workspace's own, there`, async () => {
    const root = project();
    const session = await createToolbelt({ root, userConfig: false, workspace: target.spec() as never });
    try {
      await checkpointsRoundTrip(session);
    } finally {
      await session.close();
    }
    // The project is this machine's directory (mounted, or the same host): restored here too.
    expect(readFileSync(path.join(root, "a.txt"), "utf8")).toBe("omega\nneedle one\n");
    expect(readFileSync(path.join(root, "new.txt"), "utf8")).toBe("made there\n");
  });

  it(`${target.name}: a cancelled call is cancelled there`, async () => {
    const root = project();
    const session = await createToolbelt({
      root,
      userConfig: false,
      workspace: target.spec() as never,
      allow: ["shell"],
    });
    try {
      const controller = new AbortController();
      const pending = session.call(
        "shell",
        { command: "touch started; sleep 600; touch finished", timeout_ms: 600_000 },
        { signal: controller.signal },
      );
      await waitForFile(path.join(root, "started"));
      controller.abort();
      const result = await pending;
      expect(result).toMatchObject({ kind: "error" });
      // The session there is still usable after the cancellation.
      const after = await session.call("read_file", { path: "a.txt" });
      expect(JSON.stringify(after)).toContain("needle one");
      expect(existsSync(path.join(root, "finished"))).toBe(false);
    } finally {
      await session.close();
    }
  });
}

/**
 * Writes and edits through a workspace session, then lists, diffs and restores its checkpoints with
 * the host's `session.checkpoints`, checking through the workspace's own read_file that the files
 * there went back (and forward again when the restore is undone).
 */
async function checkpointsRoundTrip(session: Session): Promise<void> {
  const read = async (file: string) => JSON.stringify(await session.call("read_file", { path: file }));
  const w = await session.call(
    "write_file",
    { path: "new.txt", content: "made there\n" },
    { callId: "ck-write" },
  );
  expect(w.kind).not.toBe("error");
  const e = await session.call(
    "edit_file",
    { path: "a.txt", old_text: "alpha", new_text: "omega" },
    { callId: "ck-edit" },
  );
  expect(e.kind).not.toBe("error");
  const list = await session.checkpoints.list();
  expect(list.map((c) => c.call)).toEqual(["ck-write", "ck-edit"]);
  expect(list.map((c) => c.files.map((f) => f.path))).toEqual([["new.txt"], ["a.txt"]]);
  const diff = await session.checkpoints.diff("ck-edit");
  expect(diff.files).toHaveLength(1);
  expect(diff.files[0]?.diff).toContain("-alpha");
  expect(diff.files[0]?.diff).toContain("+omega");
  const summary = await session.checkpoints.summary();
  expect(summary.where).toMatch(/checkpoints/);
  expect(summary.bytes).toBeGreaterThan(0);
  // An unknown checkpoint is the same error as locally.
  const unknown = await session.checkpoints.restore("no-such-checkpoint").catch((x: unknown) => x);
  expect((unknown as ToolbeltError).code).toBe("ENOENT");
  const restored = await session.checkpoints.restore("ck-write");
  expect([...restored.files].sort((a, b) => a.path.localeCompare(b.path))).toEqual([
    { path: "a.txt", action: "written" },
    { path: "new.txt", action: "removed" },
  ]);
  expect(restored.checkpoint).toBeDefined();
  expect(await read("a.txt")).toContain("alpha");
  expect(await read("new.txt")).toContain("ENOENT");
  // The restore is a checkpoint there too: restoring it undoes the restore.
  const undone = await session.checkpoints.restore(restored.checkpoint as string);
  expect(undone.files.map((f) => f.path).sort()).toEqual(["a.txt", "new.txt"]);
  expect(await read("a.txt")).toContain("omega");
  expect(await read("new.txt")).toContain("made there");
  expect((await session.checkpoints.list()).map((c) => c.tool)).toEqual([
    "write_file",
    "edit_file",
    "checkpoints_restore",
    "checkpoints_restore",
  ]);
}

/** Processes on this machine (the SSH host) serving `root` (`serve --mcp --root ROOT`). */
function servingRoot(root: string): string[] {
  return execFileSync("ps", ["-eo", "pid=,args="], { encoding: "utf8" })
    .split("\n")
    .filter((line) => line.includes("serve --mcp") && line.includes(`--root ${root}`));
}

/** Whether a process whose command line contains `text` runs on this machine. */
function running(text: string): boolean {
  return execFileSync("ps", ["-eo", "args="], { encoding: "utf8" })
    .split("\n")
    .some((line) => line.includes(text));
}

async function waitForFile(file: string): Promise<void> {
  const dir = path.dirname(file);
  const { watch } = await import("node:fs");
  await new Promise<void>((resolve) => {
    const watcher = watch(dir, () => {
      if (existsSync(file)) {
        watcher.close();
        resolve();
      }
    });
    if (existsSync(file)) {
      watcher.close();
      resolve();
    }
  });
}

describe.skipIf(skipDocker)("docker workspace (private daemon, built CLI)", { timeout: 90_000 }, () => {
  beforeAll(() => assertBuilt());
  afterAll(async () => {
    expect(await allSessionContainers()).toEqual([]);
  });
  suite(docker);

  it("docker: with the project copied in (this machine cannot see it), the host SDK restores the files in the container", async () => {
    const root = project();
    const session = await createToolbelt({
      root,
      userConfig: false,
      workspace: { ...docker.spec(), project: "copy" } as never,
    });
    try {
      await checkpointsRoundTrip(session);
    } finally {
      await session.close();
    }
    // Nothing of it reached this machine: the changes and their restores happened in the container.
    expect(readFileSync(path.join(root, "a.txt"), "utf8")).toBe("alpha\nneedle one\n");
    expect(existsSync(path.join(root, "new.txt"))).toBe(false);
    expect(await allSessionContainers()).toEqual([]);
  });

  it("docker: the CLI lists and restores the checkpoints of a running container, with the workspace's policy and the host's tightening", async () => {
    const name = `tb-ckpt-${process.pid}`;
    const container = await startToolbeltContainer(name, hostToolbelt());
    try {
      await cliRoundTrip(["--workspace", `docker:${name}:/work`], docker.env(), (file) =>
        execIn(name, ["cat", `/work/${file}`]),
      );
    } finally {
      await container.remove();
    }
    // Eight CLI runs, each starting toolbelt in the container: more than one test's usual budget.
  }, 180_000);

  it("docker: killing the container mid-call fails the call with EWORKSPACE, and nothing is left", async () => {
    const root = project();
    const id = `s-kill-${process.pid}`;
    const session = await createToolbelt({
      root,
      id,
      userConfig: false,
      workspace: docker.spec() as never,
      allow: ["shell"],
    });
    try {
      const [container] = await containersOf(id);
      expect(container).toBeDefined();
      const pending = session.call("shell", { command: "touch started; sleep 600", timeout_ms: 600_000 });
      await waitForFile(path.join(root, "started"));
      const killed = await engine("POST", `/containers/${container}/kill`);
      expect(killed.status).toBe(204);
      const result = await pending;
      expect(result).toMatchObject({ kind: "error", code: "EWORKSPACE" });
      expect((result as { message: string }).message).toMatch(/connection to .* was lost during shell/);
      // The next call tries the workspace again and says it is gone, not a hang.
      const next = await session.call("read_file", { path: "a.txt" });
      expect(next).toMatchObject({ kind: "error", code: "EWORKSPACE" });
      // The checkpoints are the workspace's: with it gone they are EWORKSPACE, never this machine's.
      const listed = await session.checkpoints.list().catch((e: unknown) => e);
      expect(ToolbeltError.isInstance(listed) && listed.code).toBe("EWORKSPACE");
    } finally {
      await session.close();
    }
    expect(await containersOf(id)).toEqual([]);
  });

  it("docker: an image without a usable Node is named as such, and its container removed", async () => {
    // An image with no libc at all: the host's Node, mounted, cannot run in it.
    const image = "toolbelt-test-empty:latest";
    const made = await importEmptyImage(image);
    expect(made).toBe(200);
    const root = project();
    const result = await cli(
      [
        "run",
        "read_file",
        "--workspace",
        `docker-image:${image}`,
        "--root",
        root,
        "--input",
        '{"path":"a.txt"}',
      ],
      { env: docker.env(), timeoutMs: 75_000 },
    );
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/EWORKSPACE: .*no usable Node/);
    expect(await allSessionContainers()).toEqual([]);
    await engine("DELETE", `/images/${encodeURIComponent(image)}?force=true`);
  });

  it("docker: an unreachable daemon and a missing container are named (EWORKSPACE), exit 1", async () => {
    const noDaemon = await cli(
      ["run", "read_file", "--workspace", "docker:web:/srv", "--input", '{"path":"a"}'],
      { env: { DOCKER_HOST: `unix://${path.join(os.tmpdir(), "no-such-docker.sock")}` } },
    );
    expect(noDaemon.code).toBe(1);
    expect(noDaemon.stderr).toMatch(
      /EWORKSPACE: cannot reach the Docker daemon at unix:\/\/.*no-such-docker\.sock/,
    );
    const noContainer = await cli(
      ["run", "read_file", "--workspace", "docker:no-such-container-tb:/srv", "--input", '{"path":"a"}'],
      { env: docker.env() },
    );
    expect(noContainer.code).toBe(1);
    expect(noContainer.stderr).toMatch(/EWORKSPACE: no container no-such-container-tb/);
  });

  it("docker doctor says how toolbelt gets in and what the sandbox does inside the container", async () => {
    const root = project();
    const result = await cli(
      ["doctor", "--format", "json", "--workspace", `docker-image:${BASE_IMAGE}`, "--root", root],
      { env: docker.env(), timeoutMs: 75_000 },
    );
    expect(result.code, result.stderr).toBe(0);
    const checks = JSON.parse(result.stdout) as Array<{
      family: string;
      name: string;
      status: string;
      detail: string;
    }>;
    expect(checks.find((c) => c.name === "toolbelt")?.detail).toMatch(/host's Node .* mounted read-only/);
    const sandbox = checks.find((c) => c.family === "workspace:shell" && c.name === "sandbox");
    expect(sandbox).toBeDefined();
    // Whatever Landlock does in there is reported, never silently absent.
    console.info(`sandbox inside the container: ${sandbox?.status} ${sandbox?.detail}`);
    expect(await allSessionContainers()).toEqual([]);
  });
});

/**
 * The CLI end to end against a workspace that outlives each command (a running container, an SSH
 * host): writes with `exec`, then `checkpoints list/diff/restore --workspace`, checking the files
 * there with `contents`. A restore is a write there: a host config that denies writes refuses it,
 * and nothing changes; a protected path needs --allow protected.
 */
async function cliRoundTrip(
  where: string[],
  env: NodeJS.ProcessEnv,
  contents: (file: string) => Promise<string>,
): Promise<void> {
  const calls = [
    { id: "cw", tool: "write_file", input: { path: "a.txt", content: "first\n" } },
    { id: "cx", tool: "write_file", input: { path: "a.txt", content: "second\n" } },
    { id: "cy", tool: "write_file", input: { path: "new.txt", content: "made there\n" } },
  ];
  const wrote = await cli(["exec", ...where, "--allow", "protected"], {
    input: [
      ...calls,
      { id: "cz", tool: "write_file", input: { path: ".mcp.json", content: '{"mcpServers":{}}\n' } },
    ]
      .map((c) => JSON.stringify(c))
      .join("\n"),
    env,
    timeoutMs: 75_000,
  });
  expect(wrote.code, wrote.stderr).toBe(0);
  expect(await contents("a.txt")).toBe("second\n");
  const listed = await cli(["checkpoints", "list", ...where, "--json"], { env, timeoutMs: 75_000 });
  expect(listed.code, listed.stderr).toBe(0);
  const list = JSON.parse(listed.stdout) as { checkpoints: Array<{ call?: string }>; store: string };
  expect(list.checkpoints.map((c) => c.call)).toEqual(["cw", "cx", "cy", "cz"]);
  const text = await cli(["checkpoints", "diff", "cx", ...where], { env, timeoutMs: 75_000 });
  expect(text.code, text.stderr).toBe(0);
  expect(text.stdout).toContain("-first");
  expect(text.stdout).toContain("+second");
  // The host's own settings travel and can only tighten: a deny rule for restores refuses it there.
  const deny = path.join(tempRoot("tb-ws-deny-"), "deny.json");
  writeFileSync(deny, JSON.stringify({ tools: { checkpoints: { rules: { deny: ["write(**)"] } } } }));
  const refused = await cli(["checkpoints", "restore", "cx", ...where, "--config", deny], {
    env,
    timeoutMs: 75_000,
  });
  expect(refused.code).toBe(1);
  expect(refused.stderr).toMatch(/EDENIED/);
  expect(await contents("a.txt")).toBe("second\n");
  // A restore touching a protected path there needs --allow protected, as any write there.
  const protectedRefused = await cli(["checkpoints", "restore", "cx", ...where], { env, timeoutMs: 75_000 });
  expect(protectedRefused.code).toBe(1);
  expect(protectedRefused.stderr).toMatch(/EDENIED: .*protected/);
  expect(await contents("a.txt")).toBe("second\n");
  const restored = await cli(["checkpoints", "restore", "cx", ...where, "--allow", "protected", "--json"], {
    env,
    timeoutMs: 75_000,
  });
  expect(restored.code, restored.stderr).toBe(0);
  expect(JSON.parse(restored.stdout)).toMatchObject({ kind: "checkpoint_restore" });
  expect(await contents("a.txt")).toBe("first\n");
  expect(await contents("new.txt")).toBe("");
  expect(await contents(".mcp.json")).toBe("");
  const unknown = await cli(["checkpoints", "restore", "nope", ...where], { env, timeoutMs: 75_000 });
  expect(unknown.code).toBe(1);
  expect(unknown.stderr).toMatch(/ENOENT: no checkpoint "nope"/);
}

/** Imports an image holding one text file (no libc, no shell) through the Engine API. */
async function importEmptyImage(name: string): Promise<number> {
  const { execFileSync } = await import("node:child_process");
  const dir = tempRoot("tb-empty-image-");
  mkdirSync(path.join(dir, "etc"));
  writeFileSync(path.join(dir, "etc", "hostname"), "empty\n");
  const tar = execFileSync("tar", ["-C", dir, "-c", "."]);
  const [repo, tag] = name.split(":");
  return (await engine("POST", `/images/create?fromSrc=-&repo=${repo}&tag=${tag}`, tar)).status;
}

describe.skipIf(skipSsh)(
  "ssh workspace (a test-owned sshd on loopback, built CLI)",
  { timeout: 90_000 },
  () => {
    beforeAll(async () => {
      assertBuilt();
      sshd = await startSshd();
    });
    afterAll(async () => {
      await sshd?.stop();
    });
    suite(ssh);

    it("ssh: killing the ssh connection mid-call fails the call with EWORKSPACE, and nothing is left on the host", async () => {
      const root = project();
      const session = await createToolbelt({
        root,
        userConfig: false,
        workspace: ssh.spec() as never,
        allow: ["shell"],
      });
      try {
        const pending = session.call("shell", {
          command: "touch started; exec sleep 606",
          timeout_ms: 600_000,
        });
        await waitForFile(path.join(root, "started"));
        // The user's ssh, started by this process for the session: the link's only connection.
        const client = execFileSync("ps", ["-eo", "pid=,ppid=,args="], { encoding: "utf8" })
          .split("\n")
          .map((line) => line.trim().split(/\s+/))
          .find(
            ([, ppid, cmd, ...rest]) =>
              Number(ppid) === process.pid && cmd?.endsWith("ssh") && rest.join(" ").includes(root),
          );
        expect(client).toBeDefined();
        process.kill(Number(client?.[0]), "SIGKILL");
        const result = await pending;
        expect(result).toMatchObject({ kind: "error", code: "EWORKSPACE" });
        expect((result as { message: string }).message).toMatch(/connection to ssh .* was lost during shell/);
        // The host's toolbelt saw its connection go, closed its session and ended the command it ran.
        await until(
          () => servingRoot(root).length === 0 && !running("sleep 606"),
          "the host's toolbelt and its command to end",
        );
        // The next call starts toolbelt there again: the workspace is still there.
        const next = await session.call("read_file", { path: "a.txt" });
        expect(JSON.stringify(next)).toContain("needle one");
      } finally {
        await session.close();
      }
      expect(servingRoot(root)).toEqual([]);
    });

    it("ssh: the CLI lists and restores the checkpoints recorded on the host, with the workspace's policy and the host's tightening", async () => {
      const root = tempRoot("tb-ws-ck-");
      await cliRoundTrip(["--workspace", `ssh:${sshd?.host}:${root}`], ssh.env(), async (file) => {
        const at = path.join(root, file);
        return existsSync(at) ? readFileSync(at, "utf8") : "";
      });
      // Eight CLI runs, each logging in with ssh and starting toolbelt there.
    }, 180_000);

    it("ssh: a host that cannot be reached is named (EWORKSPACE), exit 1", async () => {
      const result = await cli(
        ["run", "read_file", "--workspace", "ssh:no-such-host.invalid:/srv", "--input", '{"path":"a"}'],
        { env: ssh.env() },
      );
      expect(result.code).toBe(1);
      expect(result.stderr).toMatch(/EWORKSPACE: .*ssh could not reach or log in to no-such-host\.invalid/);
    });
  },
);

describe("workspace usage errors (no daemon needed)", () => {
  beforeAll(() => assertBuilt());

  it("an unknown workspace kind is a usage error naming the kinds (exit 2)", async () => {
    const result = await cli(["run", "read_file", "--workspace", "ftp:box", "--input", '{"path":"a"}']);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/unknown workspace kind "ftp".*docker-image:IMAGE/);
  });

  it("a remote workspace without an absolute root, or a root named twice, is a usage error (exit 2)", async () => {
    const relative = await cli(["run", "read_file", "--workspace", "ssh:me@box", "--input", '{"path":"a"}']);
    expect(relative.code).toBe(2);
    expect(relative.stderr).toMatch(/name the project's absolute path there/);
    const twice = await cli([
      "run",
      "read_file",
      "--workspace",
      "ssh:me@box:/srv/a",
      "--root",
      "/srv/b",
      "--input",
      '{"path":"a"}',
    ]);
    expect(twice.code).toBe(2);
    expect(twice.stderr).toMatch(/give it once/);
  });

  it("a destination that ssh would read as an option is refused (exit 2)", async () => {
    const result = await cli([
      "run",
      "read_file",
      "--workspace",
      "ssh:-oProxyCommand=touch%20/tmp/pwned:/srv",
      "--input",
      '{"path":"a"}',
    ]);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/not starting with -/);
  });

  it("serve --mcp answers toolbelt/checkpoints only to a host that negotiated the workspace capability", async () => {
    const root = tempRoot();
    // Well formed or not, the method does not exist for a client that is no toolbelt host.
    const answers = await mcpCall(
      ["--root", root],
      [
        { method: "toolbelt/checkpoints", params: { action: "list" } },
        { method: "toolbelt/checkpoints", params: { action: "nope" } },
      ],
    );
    expect(answers.map((a) => a.error?.code)).toEqual([-32601, -32601]);
  });

  it("a restore asked for over the link is judged as checkpoints_restore: a client cannot name a laxer writer", async () => {
    const { Client } = await import("@modelcontextprotocol/sdk/client/index.js");
    const { StdioClientTransport } = await import("@modelcontextprotocol/sdk/client/stdio.js");
    const { z } = await import("@toolbelt/core");
    const root = tempRoot();
    const client = new Client(
      { name: "claims-to-be-a-host", version: "1" },
      { capabilities: { experimental: { "toolbelt/workspace": {} } } },
    );
    await client.connect(
      new StdioClientTransport({
        command: process.execPath,
        args: [BIN, "serve", "--mcp", "--root", root],
        stderr: "ignore",
      }),
    );
    try {
      const asked = (tool: string) =>
        client
          .request(
            { method: "toolbelt/checkpoints", params: { action: "restore", checkpoint: "c1", tool } },
            z.looseObject({}),
          )
          .then(
            (value) => ({ value }),
            (error: { code?: number; message?: string }) => ({ code: error.code, message: error.message }),
          );
      // As write_file it would be judged by tools.file's rules, not tools.checkpoints'.
      expect(await asked("write_file")).toMatchObject({
        code: -32602,
        message: expect.stringMatching(/tool/),
      });
      // As checkpoints_restore it is taken (and told there is no such checkpoint).
      expect(await asked("checkpoints_restore")).toMatchObject({
        value: { ok: false, error: { code: "ENOENT" } },
      });
    } finally {
      await client.close();
    }
  });

  it("the SDK rejects an unknown kind with EINVAL_INPUT", async () => {
    const root = tempRoot();
    const error = await createToolbelt({ root, workspace: { kind: "ftp" } as never }).catch(
      (e: unknown) => e,
    );
    expect(ToolbeltError.isInstance(error)).toBe(true);
    expect((error as ToolbeltError).code).toBe("EINVAL_INPUT");
  });
});

const kubeconfig =
  process.env.KUBECONFIG ??
  (existsSync(path.join(os.homedir(), ".kube", "config")) ? "~/.kube/config" : undefined);
const skipK8s = lacks(
  "kubernetes",
  kubeconfig === undefined
    ? "no kubeconfig (KUBECONFIG or ~/.kube/config)"
    : !process.env.TOOLBELT_TEST_K8S_IMAGE && "TOOLBELT_TEST_K8S_IMAGE is not set",
);

describe.skipIf(skipK8s)(
  "kubernetes workspace (a pod from a template, the cluster of the kubeconfig)",
  () => {
    it("kubernetes: reads, writes and runs the shell in a pod made for the session, deleted at close", async () => {
      const image = process.env.TOOLBELT_TEST_K8S_IMAGE as string;
      const session = await createToolbelt({
        root: "/work",
        workspace: {
          kind: "kubernetes",
          template: {
            apiVersion: "v1",
            kind: "Pod",
            metadata: { generateName: "toolbelt-test-" },
            spec: {
              containers: [{ name: "toolbelt", image, workingDir: "/work", command: ["sleep", "infinity"] }],
            },
          },
        },
        allow: ["shell"],
      });
      try {
        const write = await session.call("write_file", { path: "a.txt", content: "in the pod\n" });
        expect(write.kind).not.toBe("error");
        const read = await session.call("read_file", { path: "a.txt" });
        expect(JSON.stringify(read)).toContain("in the pod");
        const shell = await session.call("shell", { command: "cat a.txt" });
        expect(JSON.stringify(shell)).toContain("in the pod");
      } finally {
        await session.close();
      }
    });
  },
);
