import { ToolbeltError, z } from "@toolbelt/core";

/**
 * Where a session's tools run. `local` is this machine (the default); every other kind starts
 * `toolbelt serve --mcp` inside the workspace and drives it over one byte stream.
 */
export type WorkspaceSpec =
  | LocalWorkspace
  | DockerContainerWorkspace
  | DockerImageWorkspace
  | SshWorkspace
  | KubernetesWorkspace;

export interface LocalWorkspace {
  kind: "local";
}

/** Options every remote kind shares. */
export interface RemoteOptions {
  /**
   * How to start toolbelt in the workspace, as an argv prefix (`serve --mcp …` is appended). Default:
   * what the image's `dev.toolbelt.node`/`dev.toolbelt.bin` labels say, else `toolbelt` on the PATH.
   */
  command?: string[];
}

/** A running container: toolbelt is started in it with `docker exec` (through the Engine API). */
export interface DockerContainerWorkspace extends RemoteOptions {
  kind: "docker";
  container: string;
  /** The daemon: `unix:///path/docker.sock` or `tcp://host:port`; default `$DOCKER_HOST`, else /var/run/docker.sock. */
  docker?: string;
}

/** A container started from `image` for the session, and removed when it closes. */
export interface DockerImageWorkspace extends RemoteOptions {
  kind: "docker";
  image: string;
  /** `mount` (default): the root is bind-mounted at the same path; `copy`: copied in, changes stay in the container. */
  project?: "mount" | "copy";
  docker?: string;
  /** The container's user (`uid:gid`); default: this process's, so files written through a mount keep their owner. */
  user?: string;
  /** The container's network (Docker's `NetworkMode`); default Docker's own (`bridge`). `none` cuts it off. */
  network?: string;
}

/** A host reached with the user's own `ssh` (their keys, config and agent). */
export interface SshWorkspace extends RemoteOptions {
  kind: "ssh";
  /** `[user@]host`, or a Host alias from the ssh config. */
  destination: string;
  port?: number;
  /** The ssh program (default `ssh` on the PATH). */
  ssh?: string;
  /** More ssh arguments before the destination, e.g. `["-F", "/path/config"]`. */
  sshArgs?: string[];
}

/** A pod, or a pod made from a template for the session (deleted when it closes). */
export interface KubernetesWorkspace extends RemoteOptions {
  kind: "kubernetes";
  pod?: string;
  /** A pod manifest (object, or a path to a JSON/YAML file): a pod is created from it per session. */
  template?: string | Record<string, unknown>;
  /** Default: the kubeconfig context's namespace, else `default`. */
  namespace?: string;
  /** The kubeconfig context (default: the current one). */
  context?: string;
  /** The container in the pod (default: the first). */
  container?: string;
  /** A kubeconfig file (default: `$KUBECONFIG`, else ~/.kube/config, else in-cluster). */
  kubeconfig?: string;
}

const command = z.array(z.string().min(1)).min(1).optional();
const dockerHost = z
  .string()
  .regex(
    /^(unix:\/\/\/|tcp:\/\/|http:\/\/|https:\/\/)/,
    "unix:///path, tcp://host:port or http(s)://host:port",
  )
  .optional();
// Docker's own rule for container names; an id is hex, which it also admits.
const containerName = z.string().regex(/^[a-zA-Z0-9][a-zA-Z0-9_.-]*$/, "a container name or id");
// Kubernetes object names (RFC 1123 labels and subdomains).
const k8sName = z.string().regex(/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/, "a Kubernetes name (RFC 1123)");

// One schema per kind (docker: a container or an image), so an error names the fields of the kind meant.
const schemas = {
  local: z.strictObject({ kind: z.literal("local") }),
  container: z.strictObject({
    kind: z.literal("docker"),
    container: containerName,
    docker: dockerHost,
    command,
  }),
  image: z.strictObject({
    kind: z.literal("docker"),
    image: z.string().min(1).max(512),
    project: z.enum(["mount", "copy"]).optional(),
    docker: dockerHost,
    user: z
      .string()
      .regex(/^[a-zA-Z0-9_.-]+(:[a-zA-Z0-9_.-]+)?$/)
      .optional(),
    network: z.string().min(1).optional(),
    command,
  }),
  ssh: z.strictObject({
    kind: z.literal("ssh"),
    // Never an option: a destination starting with "-" would be read by ssh as one.
    destination: z.string().regex(/^[^-\s][^\s]*$/, "[user@]host (not starting with -, no spaces)"),
    port: z.number().int().min(1).max(65535).optional(),
    ssh: z.string().min(1).optional(),
    sshArgs: z.array(z.string()).optional(),
    command,
  }),
  kubernetes: z.strictObject({
    kind: z.literal("kubernetes"),
    pod: k8sName.optional(),
    template: z.union([z.string().min(1), z.record(z.string(), z.unknown())]).optional(),
    namespace: k8sName.optional(),
    context: z.string().min(1).optional(),
    container: k8sName.optional(),
    kubeconfig: z.string().min(1).optional(),
    command,
  }),
};

const KINDS =
  "local, docker:CONTAINER[:/path], docker-image:IMAGE, ssh:[user@]host[:/path], k8s:[namespace/]pod[:/path], k8s-template:FILE[:/path]";

function usage(message: string): ToolbeltError {
  return new ToolbeltError("EINVAL_INPUT", `--workspace: ${message} (one of ${KINDS})`, {
    details: { field: "workspace" },
  });
}

/** Checks a workspace given as an object (the SDK's form); throws EINVAL_INPUT naming what is wrong. */
export function checkWorkspace(value: unknown): WorkspaceSpec {
  const record = (typeof value === "object" && value !== null ? value : {}) as Record<string, unknown>;
  const kind = record.kind;
  const schema =
    kind === "docker"
      ? "image" in record
        ? schemas.image
        : schemas.container
      : kind === "local" || kind === "ssh" || kind === "kubernetes"
        ? schemas[kind]
        : undefined;
  if (!schema) throw usage(`unknown workspace kind ${JSON.stringify(kind)}`);
  const parsed = schema.safeParse(value);
  if (!parsed.success) throw usage(`${String(kind)}: ${z.prettifyError(parsed.error).replace(/\n/g, "; ")}`);
  const spec = parsed.data as WorkspaceSpec;
  if (spec.kind === "kubernetes" && (spec.pod === undefined) === (spec.template === undefined))
    throw usage("a kubernetes workspace names a pod or a template, exactly one");
  return spec;
}

/** A path inside the workspace named after the target (`…:/path`), split off. */
function splitPath(rest: string): { target: string; path?: string } {
  const at = rest.indexOf(":/");
  if (at < 0) return { target: rest };
  return { target: rest.slice(0, at), path: rest.slice(at + 1) };
}

/**
 * The CLI's string form: `local`, `docker:CONTAINER[:/path]`, `docker-image:IMAGE`,
 * `ssh:[user@]host[:/path]`, `k8s:[namespace/]pod[:/path]`, `k8s-template:FILE[:/path]`. A path
 * after the target is the project's root in the workspace (`root`). Throws EINVAL_INPUT.
 */
export function parseWorkspace(text: string): { spec: WorkspaceSpec; root?: string } {
  if (text === "local") return { spec: { kind: "local" } };
  const colon = text.indexOf(":");
  const kind = colon < 0 ? text : text.slice(0, colon);
  const rest = colon < 0 ? "" : text.slice(colon + 1);
  if (!["docker", "docker-image", "ssh", "k8s", "k8s-template"].includes(kind))
    throw usage(`unknown workspace kind ${JSON.stringify(kind)}`);
  if (rest === "") throw usage(`${kind}: names nothing after the colon`);
  const withRoot = (spec: unknown, root?: string) => ({
    spec: checkWorkspace(spec),
    ...(root !== undefined ? { root } : {}),
  });
  switch (kind) {
    case "docker": {
      const { target, path } = splitPath(rest);
      return withRoot({ kind: "docker", container: target }, path);
    }
    case "docker-image":
      // An image reference has colons of its own (tag, digest, registry port): the root is --root.
      return withRoot({ kind: "docker", image: rest });
    case "ssh": {
      const { target, path } = splitPath(rest);
      return withRoot({ kind: "ssh", destination: target }, path);
    }
    case "k8s": {
      const { target, path } = splitPath(rest);
      const parts = target.split("/");
      if (parts.length > 2) throw usage(`k8s:${target}: expected [namespace/]pod`);
      const [first, second] = parts as [string, string | undefined];
      return withRoot(
        second === undefined
          ? { kind: "kubernetes", pod: first }
          : { kind: "kubernetes", namespace: first, pod: second },
        path,
      );
    }
    default: {
      // k8s-template:FILE[:/path] — the file's own path may start with "/", so only a second ":/" splits.
      const at = rest.indexOf(":/", 1);
      return at < 0
        ? withRoot({ kind: "kubernetes", template: rest })
        : withRoot({ kind: "kubernetes", template: rest.slice(0, at) }, rest.slice(at + 1));
    }
  }
}

/** One line naming the workspace, for messages. */
export function describeWorkspace(spec: WorkspaceSpec): string {
  switch (spec.kind) {
    case "local":
      return "this machine";
    case "docker":
      return "container" in spec
        ? `docker container ${spec.container}`
        : `a container of image ${spec.image}`;
    case "ssh":
      return `ssh ${spec.destination}${spec.port ? ` port ${spec.port}` : ""}`;
    case "kubernetes":
      return spec.pod
        ? `kubernetes pod ${spec.namespace ? `${spec.namespace}/` : ""}${spec.pod}`
        : "a kubernetes pod made from a template";
  }
}
