import path from "node:path";
import { PassThrough, type Readable } from "node:stream";
import type Docker from "dockerode";
import {
  type Channel,
  collect,
  type HostToolbelt,
  lastLines,
  type RunResult,
  Tail,
  type WorkspaceDriver,
  workspaceError,
} from "./driver.js";
import type { DockerContainerWorkspace, DockerImageWorkspace } from "./spec.js";

/** Image (and container) labels saying where Node and toolbelt's CLI are inside: then nothing is mounted. */
export const NODE_LABEL = "dev.toolbelt.node";
export const BIN_LABEL = "dev.toolbelt.bin";
/** Marks the containers a session started, with the session's id. */
export const SESSION_LABEL = "dev.toolbelt.session";
/** Where the host's Node directory is mounted in a container that has no toolbelt. */
export const NODE_MOUNT = "/opt/toolbelt/node";

// A process that does nothing for ever, run by the container's Node: the container's life while
// toolbelt is started in it with exec (and started again on a reconnect). docker-init reaps orphans.
const KEEP_ALIVE = "setInterval(() => {}, 1 << 30)";

type Labels = Record<string, string> | undefined;

function daemonOf(spec: { docker?: string }): { options: Docker.DockerOptions | undefined; where: string } {
  const given = spec.docker;
  if (!given) {
    // docker-modem reads DOCKER_HOST (and DOCKER_TLS_VERIFY, DOCKER_CERT_PATH) itself.
    return { options: undefined, where: process.env.DOCKER_HOST ?? "unix:///var/run/docker.sock" };
  }
  if (given.startsWith("unix://"))
    return { options: { socketPath: given.slice("unix://".length) }, where: given };
  const url = new URL(given.replace(/^tcp:/, "http:"));
  return {
    options: {
      host: url.hostname,
      port: Number(url.port || (url.protocol === "https:" ? 2376 : 2375)),
      protocol: url.protocol === "https:" ? "https" : "http",
    },
    where: given,
  };
}

function statusOf(error: unknown): number | undefined {
  return (error as { statusCode?: number }).statusCode;
}

function messageOf(error: unknown): string {
  const e = error as { json?: { message?: string }; message?: string };
  return (e.json?.message ?? e.message ?? String(error)).trim();
}

/** The command labels name, when both are there. */
function labelledCommand(labels: Labels): { node: string; bin: string } | undefined {
  const node = labels?.[NODE_LABEL];
  const bin = labels?.[BIN_LABEL];
  return node && bin ? { node, bin } : undefined;
}

/** Demultiplexes an exec's hijacked stream (no tty: Docker frames stdout and stderr). */
function channelOf(docker: Docker, exec: Docker.Exec, stream: NodeJS.ReadWriteStream): Channel {
  const stdout = new PassThrough();
  const stderr = new Tail();
  const errors = new PassThrough();
  errors.on("data", (chunk: Buffer) => stderr.push(chunk));
  docker.modem.demuxStream(stream, stdout, errors);
  const ended = new Promise<{ code?: number | null; reason: string }>((resolve) => {
    let done = false;
    const finish = (why: string) => {
      if (done) return;
      done = true;
      stdout.end();
      exec
        .inspect()
        .then((info) => resolve({ code: info.Running ? undefined : info.ExitCode, reason: why }))
        .catch((error: unknown) => resolve({ reason: `${why} (${messageOf(error)})` }));
    };
    stream.on("end", () => finish("its output ended"));
    stream.on("close", () => finish("the connection to the Docker daemon closed"));
    stream.on("error", (error: Error) =>
      finish(`the connection to the Docker daemon failed: ${error.message}`),
    );
  });
  const socket = stream as NodeJS.ReadWriteStream & { destroy?: () => void };
  return {
    stdin: stream as unknown as Channel["stdin"],
    stdout: stdout as Readable,
    stderrTail: () => stderr.text,
    ended,
    destroy: () => socket.destroy?.(),
  };
}

/**
 * A Docker workspace: a running container (`container`), or one started from `image` for the
 * session and removed at close. Everything goes through the Engine API (dockerode).
 */
export class DockerDriver implements WorkspaceDriver {
  readonly label: string;
  readonly toolbelt: { command: string[]; how: string };
  readonly #docker: Docker;
  readonly #container: Docker.Container;
  readonly #owned: boolean;
  readonly #where: string;
  #closed = false;

  private constructor(
    docker: Docker,
    container: Docker.Container,
    options: { label: string; owned: boolean; where: string; toolbelt: { command: string[]; how: string } },
  ) {
    this.#docker = docker;
    this.#container = container;
    this.#owned = options.owned;
    this.#where = options.where;
    this.label = options.label;
    this.toolbelt = options.toolbelt;
  }

  static async open(
    spec: DockerContainerWorkspace | DockerImageWorkspace,
    context: { root: string; host: HostToolbelt; session: string },
  ): Promise<DockerDriver> {
    const { default: Dockerode } = await import("dockerode");
    const { options, where } = daemonOf(spec);
    const docker = new Dockerode(options);
    try {
      await docker.ping();
    } catch (error) {
      throw workspaceError(
        `cannot reach the Docker daemon at ${where}: ${messageOf(error)} (start it, or name another with DOCKER_HOST or the workspace's docker option)`,
        { workspace: "docker", daemon: where },
        error,
      );
    }
    return "container" in spec
      ? DockerDriver.#attach(docker, spec, where)
      : DockerDriver.#startFromImage(docker, spec, where, context);
  }

  static async #attach(docker: Docker, spec: DockerContainerWorkspace, where: string): Promise<DockerDriver> {
    const container = docker.getContainer(spec.container);
    let info: Docker.ContainerInspectInfo;
    try {
      info = await container.inspect();
    } catch (error) {
      throw workspaceError(
        statusOf(error) === 404
          ? `no container ${spec.container} on the Docker daemon at ${where}`
          : `cannot inspect container ${spec.container}: ${messageOf(error)}`,
        { workspace: "docker", container: spec.container },
        error,
      );
    }
    if (!info.State.Running)
      throw workspaceError(`container ${spec.container} is not running (${info.State.Status})`, {
        workspace: "docker",
        container: spec.container,
      });
    const labelled = labelledCommand(info.Config.Labels);
    const toolbelt = spec.command
      ? { command: spec.command, how: "the workspace's command option" }
      : labelled
        ? { command: [labelled.node, labelled.bin], how: `the container's ${NODE_LABEL}/${BIN_LABEL} labels` }
        : { command: ["toolbelt"], how: "toolbelt on the container's PATH" };
    return new DockerDriver(docker, container, {
      label: `docker container ${spec.container}`,
      owned: false,
      where,
      toolbelt,
    });
  }

  static async #startFromImage(
    docker: Docker,
    spec: DockerImageWorkspace,
    where: string,
    context: { root: string; host: HostToolbelt; session: string },
  ): Promise<DockerDriver> {
    let image: Docker.ImageInspectInfo;
    try {
      image = await docker.getImage(spec.image).inspect();
    } catch (error) {
      throw workspaceError(
        statusOf(error) === 404
          ? `no image ${spec.image} on the Docker daemon at ${where}: pull or build it first (toolbelt never pulls)`
          : `cannot inspect image ${spec.image}: ${messageOf(error)}`,
        { workspace: "docker", image: spec.image },
        error,
      );
    }
    const { root, host } = context;
    const labelled = labelledCommand(image.Config?.Labels ?? undefined);
    const binds: string[] = [];
    let node: string;
    let how: string;
    let command: string[];
    if (labelled) {
      node = labelled.node;
      command = [labelled.node, labelled.bin];
      how = `the image's own toolbelt (${NODE_LABEL}/${BIN_LABEL} labels)`;
    } else {
      // The image has none: the host's Node and installation, read-only, at paths that cannot clash.
      node = `${NODE_MOUNT}/${path.basename(host.node)}`;
      command = [node, host.bin];
      binds.push(`${path.dirname(host.node)}:${NODE_MOUNT}:ro`);
      if (host.installRoot !== root) binds.push(`${host.installRoot}:${host.installRoot}:ro`);
      how = `the host's Node (${host.node}) and toolbelt (${host.installRoot}), mounted read-only`;
    }
    if (spec.command) command = spec.command;
    const copy = spec.project === "copy";
    if (!copy) binds.push(`${root}:${root}`);
    const user =
      spec.user ?? (process.getuid && process.getgid ? `${process.getuid()}:${process.getgid()}` : undefined);
    let container: Docker.Container;
    try {
      container = await docker.createContainer({
        Image: spec.image,
        Entrypoint: [node],
        Cmd: ["-e", KEEP_ALIVE],
        WorkingDir: "/",
        ...(user ? { User: user } : {}),
        // A user with no home in the image still gets a writable one (toolbelt's state and config).
        ...(spec.user ? {} : { Env: ["HOME=/tmp"] }),
        Labels: { [SESSION_LABEL]: context.session },
        HostConfig: {
          Binds: binds,
          Init: true,
          ...(spec.network ? { NetworkMode: spec.network } : {}),
        },
      });
    } catch (error) {
      throw workspaceError(`cannot create a container from ${spec.image}: ${messageOf(error)}`, {
        workspace: "docker",
        image: spec.image,
      });
    }
    const driver = new DockerDriver(docker, container, {
      label: `a container of image ${spec.image}`,
      owned: true,
      where,
      toolbelt: { command, how },
    });
    try {
      await container.start();
      if (copy) await driver.#copyIn(root);
      const state = (await container.inspect()).State;
      if (!state.Running) throw workspaceError(await driver.#whyNotRunning(node), { workspace: "docker" });
    } catch (error) {
      await driver.close();
      if ((error as { code?: string }).code === "EWORKSPACE") throw error;
      throw workspaceError(`cannot start a container from ${spec.image}: ${messageOf(error)}`, {
        workspace: "docker",
        image: spec.image,
      });
    }
    return driver;
  }

  /** Copies the root into the container at the same path (the `copy` project mode). */
  async #copyIn(root: string): Promise<void> {
    const tar = await import("tar-fs");
    // Entries named by their path from "/", so extracting at "/" makes the same path inside.
    const prefix = root.replace(/^\/+/, "");
    const pack = tar.pack(root, {
      map: (header) => {
        header.name = header.name === "." ? prefix : `${prefix}/${header.name}`;
        return header;
      },
    });
    await this.#container.putArchive(pack, { path: "/" });
  }

  /** Why the container stopped: its exit code and the end of its output, with what that likely means. */
  async #whyNotRunning(node: string): Promise<string> {
    const info = await this.#container.inspect().catch(() => undefined);
    const code = info?.State.ExitCode;
    const logs = await this.#container
      .logs({ stdout: true, stderr: true, follow: false })
      .then((b) => stripFrames(b as unknown as Buffer))
      .catch(() => "");
    const noNode = code === 126 || code === 127 || /no such file|not found|exec format|GLIBC/i.test(logs);
    const what = noNode
      ? `the image has no usable Node at ${node} (a Node built for another libc or architecture, or none): use an image with glibc for the host's Node, or one with toolbelt installed (docs/workspaces.md)`
      : "the container stopped as soon as it started";
    return `${what}; exit code ${code ?? "unknown"}${logs ? `, output: ${lastLines(logs)}` : ""}`;
  }

  async start(argv: string[], cwd: string): Promise<Channel> {
    let exec: Docker.Exec;
    let stream: NodeJS.ReadWriteStream;
    try {
      exec = await this.#container.exec({
        Cmd: argv,
        AttachStdin: true,
        AttachStdout: true,
        AttachStderr: true,
        Tty: false,
        WorkingDir: cwd,
      });
      stream = (await exec.start({ hijack: true, stdin: true })) as NodeJS.ReadWriteStream;
    } catch (error) {
      throw workspaceError(await this.#explainStart(error), { workspace: "docker" }, error);
    }
    return channelOf(this.#docker, exec, stream);
  }

  async #explainStart(error: unknown): Promise<string> {
    const info = await this.#container.inspect().catch(() => undefined);
    if (!info) return `${this.label} is gone (${messageOf(error)})`;
    if (!info.State.Running)
      return `${this.label} is not running: ${await this.#whyNotRunning(this.toolbelt.command[0] ?? "node")}`;
    return `cannot start toolbelt in ${this.label}: ${messageOf(error)}`;
  }

  async run(argv: string[], cwd: string): Promise<RunResult> {
    return collect(await this.start(argv, cwd));
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    if (!this.#owned) return;
    try {
      await this.#container.remove({ force: true, v: true });
    } catch (error) {
      // Already removed (or the daemon is gone, taking the container with it) is the goal reached.
      if (statusOf(error) !== 404 && statusOf(error) !== 409) throw error;
    }
  }

  /** The daemon this driver talks to, for doctor. */
  get daemon(): string {
    return this.#where;
  }
}

/** Container logs without a tty come framed like exec streams: the text, frames removed. */
function stripFrames(buffer: Buffer): string {
  const parts: Buffer[] = [];
  let at = 0;
  while (at + 8 <= buffer.length) {
    const size = buffer.readUInt32BE(at + 4);
    parts.push(buffer.subarray(at + 8, at + 8 + size));
    at += 8 + size;
  }
  return Buffer.concat(parts).toString("utf8").trim();
}
