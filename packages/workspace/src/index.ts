// @toolbelt/workspace: where a session's tools run when it is not this machine. Each backend gives
// a byte stream to a process started inside the workspace (`toolbelt serve --mcp`, which the host
// drives); toolbelt does the rest. dockerode and @kubernetes/client-node load only when a Docker or
// Kubernetes workspace opens: a local session never loads them.
import { DockerDriver } from "./docker.js";
import type { HostToolbelt, WorkspaceDriver } from "./driver.js";
import { KubernetesDriver } from "./kubernetes.js";
import type { WorkspaceSpec } from "./spec.js";
import { SshDriver } from "./ssh.js";

export { BIN_LABEL, NODE_LABEL, NODE_MOUNT, SESSION_LABEL } from "./docker.js";
export type { Channel, HostToolbelt, RunResult, WorkspaceDriver } from "./driver.js";
export { podFromTemplate } from "./kubernetes.js";
export {
  checkWorkspace,
  type DockerContainerWorkspace,
  type DockerImageWorkspace,
  describeWorkspace,
  type KubernetesWorkspace,
  type LocalWorkspace,
  parseWorkspace,
  type RemoteOptions,
  type SshWorkspace,
  type WorkspaceSpec,
} from "./spec.js";
export { shellQuote } from "./ssh.js";

/** What opening a driver needs from the host: the root, the host's own toolbelt, the session's id. */
export interface DriverContext {
  /** The project's root: a host directory for a container started from an image, else the path in the workspace. */
  root: string;
  host: HostToolbelt;
  session: string;
}

/** Opens the backend of a remote workspace; throws EWORKSPACE (named) when it cannot be reached. */
export async function openDriver(
  spec: Exclude<WorkspaceSpec, { kind: "local" }>,
  context: DriverContext,
): Promise<WorkspaceDriver> {
  switch (spec.kind) {
    case "docker":
      return DockerDriver.open(spec, context);
    case "ssh":
      return new SshDriver(spec);
    case "kubernetes":
      return KubernetesDriver.open(spec, context);
  }
}
