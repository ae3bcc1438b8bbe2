import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, writeFileSync } from "node:fs";
import http from "node:http";
import path from "node:path";
import { BIN, tempRoot } from "./cli-harness.js";

// What the workspace tests run against: a private Docker daemon (scripts/ci/docker-up.sh starts one
// and imports the debootstrap image) and an sshd of the test's own on a loopback port.

/** The image the Docker tests start containers from: a plain Debian with no Node of its own. */
export const BASE_IMAGE = "toolbelt-base:bookworm";

/** The daemon's socket path from TOOLBELT_TEST_DOCKER_HOST (`unix:///path`), or undefined. */
export function dockerSocket(): string | undefined {
  const host = process.env.TOOLBELT_TEST_DOCKER_HOST;
  return host?.startsWith("unix://") ? host.slice("unix://".length) : undefined;
}

/** One Engine API request over the daemon's socket: status and parsed body. */
export function engine(
  method: string,
  url: string,
  body?: Buffer,
  contentType?: string,
): Promise<{ status: number; body: unknown }> {
  const socketPath = dockerSocket();
  if (!socketPath) throw new Error("TOOLBELT_TEST_DOCKER_HOST is not set");
  const headers = contentType ? { "Content-Type": contentType } : undefined;
  return new Promise((resolve, reject) => {
    const req = http.request({ socketPath, path: url, method, headers }, (res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (d: string) => {
        text += d;
      });
      res.on("end", () => {
        let body: unknown = text;
        try {
          body = JSON.parse(text);
        } catch {
          // Plain text (/_ping answers "OK").
        }
        resolve({ status: res.statusCode ?? 0, body });
      });
    });
    req.on("error", reject);
    req.end(body);
  });
}

/** Why the Docker tests cannot run here (no daemon, or no base image), or undefined when they can. */
export async function dockerMissing(): Promise<string | undefined> {
  if (!dockerSocket())
    return "TOOLBELT_TEST_DOCKER_HOST is not set (scripts/ci/docker-up.sh prints the value to export)";
  try {
    const ping = await engine("GET", "/_ping");
    if (ping.status !== 200)
      return `the daemon at ${process.env.TOOLBELT_TEST_DOCKER_HOST} answers ${ping.status}`;
    const image = await engine("GET", `/images/${encodeURIComponent(BASE_IMAGE)}/json`);
    if (image.status !== 200) return `no image ${BASE_IMAGE} (scripts/ci/docker-up.sh imports it)`;
  } catch (error) {
    return `no Docker daemon answers at ${process.env.TOOLBELT_TEST_DOCKER_HOST}: ${(error as Error).message}`;
  }
  return undefined;
}

/** The containers a session started (labelled with its id), as Engine API ids. */
export async function containersOf(session: string): Promise<string[]> {
  const filters = encodeURIComponent(JSON.stringify({ label: [`dev.toolbelt.session=${session}`] }));
  const listed = await engine("GET", `/containers/json?all=true&filters=${filters}`);
  return (listed.body as Array<{ Id: string }>).map((c) => c.Id);
}

/** Containers any test session left behind (all sessions label theirs). */
export async function allSessionContainers(): Promise<string[]> {
  const filters = encodeURIComponent(JSON.stringify({ label: ["dev.toolbelt.session"] }));
  const listed = await engine("GET", `/containers/json?all=true&filters=${filters}`);
  return (listed.body as Array<{ Id: string }>).map((c) => c.Id);
}

/**
 * A long-lived container named `name` as a user keeps one (`--workspace docker:NAME:/work`): the
 * host's Node and toolbelt mounted read-only and named by the labels toolbelt reads, the project at
 * /work inside only (this machine cannot see it). Removed by `remove()`.
 */
export async function startToolbeltContainer(
  name: string,
  host: { node: string; bin: string; installRoot: string },
): Promise<{ remove(): Promise<void> }> {
  const node = `/opt/toolbelt/node/${path.basename(host.node)}`;
  const spec = {
    Image: BASE_IMAGE,
    Entrypoint: [node],
    Cmd: ["-e", "setInterval(() => {}, 1 << 30)"],
    WorkingDir: "/work",
    Labels: { "dev.toolbelt.node": node, "dev.toolbelt.bin": host.bin, "dev.toolbelt.test": name },
    HostConfig: {
      Binds: [
        `${path.dirname(host.node)}:/opt/toolbelt/node:ro`,
        `${host.installRoot}:${host.installRoot}:ro`,
      ],
      Init: true,
    },
  };
  const made = await engine(
    "POST",
    `/containers/create?name=${encodeURIComponent(name)}`,
    Buffer.from(JSON.stringify(spec)),
    "application/json",
  );
  if (made.status !== 201) throw new Error(`cannot create container ${name}: ${JSON.stringify(made.body)}`);
  const started = await engine("POST", `/containers/${name}/start`);
  if (started.status !== 204)
    throw new Error(`cannot start container ${name}: ${JSON.stringify(started.body)}`);
  return {
    remove: async () => {
      await engine("DELETE", `/containers/${name}?force=true&v=true`);
    },
  };
}

/** Runs `argv` in a running container to its end, and returns what it wrote to stdout (framing removed). */
export async function execIn(container: string, argv: string[]): Promise<string> {
  const made = await engine(
    "POST",
    `/containers/${container}/exec`,
    Buffer.from(JSON.stringify({ Cmd: argv, AttachStdout: true, AttachStderr: false })),
    "application/json",
  );
  if (made.status !== 201) throw new Error(`cannot exec in ${container}: ${JSON.stringify(made.body)}`);
  const id = (made.body as { Id: string }).Id;
  const socketPath = dockerSocket() as string;
  const raw = await new Promise<Buffer>((resolve, reject) => {
    const req = http.request(
      {
        socketPath,
        path: `/exec/${id}/start`,
        method: "POST",
        headers: { "Content-Type": "application/json" },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (d: Buffer) => chunks.push(d));
        res.on("end", () => resolve(Buffer.concat(chunks)));
      },
    );
    req.on("error", reject);
    req.end(JSON.stringify({ Detach: false, Tty: false }));
  });
  // Without a tty Docker frames the output: 8 bytes of header (stream, size) before each part.
  const parts: Buffer[] = [];
  for (let at = 0; at + 8 <= raw.length; ) {
    const size = raw.readUInt32BE(at + 4);
    if (raw[at] === 1) parts.push(raw.subarray(at + 8, at + 8 + size));
    at += 8 + size;
  }
  return Buffer.concat(parts).toString("utf8");
}

const SSHD = "/usr/sbin/sshd";

/** Why an sshd of the test's own cannot run here, or undefined. */
export function sshdMissing(): string | undefined {
  if (!existsSync(SSHD)) return `no ${SSHD} (Debian's openssh-server)`;
  if (!existsSync("/usr/bin/ssh") || !existsSync("/usr/bin/ssh-keygen")) return "no ssh or ssh-keygen";
  if (process.getuid?.() !== 0 && !existsSync("/run/sshd"))
    return "sshd needs /run/sshd (its privilege separation directory), which only root can make";
  return undefined;
}

export interface Sshd {
  /** A directory put first on PATH: its `ssh` runs the real one with the test's config (`-F`). */
  bin: string;
  /** The ssh config file (Host `tbtest` is the test's sshd). */
  config: string;
  /** The Host alias to connect to. */
  host: string;
  stop(): Promise<void>;
}

/**
 * An sshd of the test's own: its config, host key and authorized_keys in a temp dir, on a free
 * loopback port, logging in as this user with a generated key. The remote PATH holds a `toolbelt`
 * that runs the built CLI (a user installs toolbelt there; see docs/workspaces.md).
 */
export async function startSshd(): Promise<Sshd> {
  const dir = tempRoot("tb-sshd-");
  const bin = path.join(dir, "bin");
  mkdirSync(bin);
  // The privilege separation directory sshd insists on (Debian's service makes it at boot).
  if (!existsSync("/run/sshd")) mkdirSync("/run/sshd", { mode: 0o755 });
  const key = (name: string) =>
    execFileSync("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-f", path.join(dir, name)]);
  key("host_key");
  key("user_key");
  execFileSync("cp", [path.join(dir, "user_key.pub"), path.join(dir, "authorized_keys")]);
  writeFileSync(path.join(bin, "toolbelt"), `#!/bin/sh\nexec ${process.execPath} ${BIN} "$@"\n`);
  chmodSync(path.join(bin, "toolbelt"), 0o755);
  const port = await freePort();
  const user = execFileSync("id", ["-un"], { encoding: "utf8" }).trim();
  const sshdConfig = path.join(dir, "sshd_config");
  writeFileSync(
    sshdConfig,
    [
      `Port ${port}`,
      "ListenAddress 127.0.0.1",
      `HostKey ${dir}/host_key`,
      `AuthorizedKeysFile ${dir}/authorized_keys`,
      `PidFile ${dir}/sshd.pid`,
      "StrictModes no",
      "UsePAM no",
      "PasswordAuthentication no",
      "KbdInteractiveAuthentication no",
      "PermitRootLogin prohibit-password",
      `SetEnv PATH=${bin}:/usr/local/bin:/usr/bin:/bin`,
      "",
    ].join("\n"),
  );
  const config = path.join(dir, "ssh_config");
  writeFileSync(
    config,
    [
      "Host tbtest",
      "  HostName 127.0.0.1",
      `  Port ${port}`,
      `  User ${user}`,
      `  IdentityFile ${dir}/user_key`,
      "  IdentitiesOnly yes",
      `  UserKnownHostsFile ${dir}/known_hosts`,
      "  StrictHostKeyChecking accept-new",
      "",
    ].join("\n"),
  );
  // The client side's `ssh`: the real one, with this config.
  writeFileSync(path.join(bin, "ssh"), `#!/bin/sh\nexec /usr/bin/ssh -F ${config} "$@"\n`);
  chmodSync(path.join(bin, "ssh"), 0o755);
  const child: ChildProcess = spawn(SSHD, ["-D", "-e", "-f", sshdConfig], {
    stdio: ["ignore", "ignore", "pipe"],
  });
  await new Promise<void>((resolve, reject) => {
    let said = "";
    child.stderr?.setEncoding("utf8");
    child.stderr?.on("data", (d: string) => {
      said += d;
      if (said.includes("Server listening")) resolve();
    });
    child.once("exit", (code) => reject(new Error(`sshd exited (${code}): ${said}`)));
  });
  return {
    bin,
    config,
    host: "tbtest",
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once("exit", () => resolve());
        child.kill("SIGTERM");
      }),
  };
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = http.createServer();
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => (typeof address === "object" && address ? resolve(address.port) : reject()));
    });
  });
}
