import { readFileSync } from "node:fs";
import { PassThrough } from "node:stream";
import type * as K8s from "@kubernetes/client-node";
import {
  type Channel,
  collect,
  type RunResult,
  Tail,
  type WorkspaceDriver,
  workspaceError,
} from "./driver.js";
import type { KubernetesWorkspace } from "./spec.js";

/** Marks the pods a session created, with the session's id. */
export const SESSION_LABEL = "toolbelt.dev/session";

/** How long a pod made from a template may take to be Running. */
const POD_START_MS = 120_000;
const POD_POLL_MS = 500;

function messageOf(error: unknown): string {
  const e = error as { body?: unknown; message?: string };
  const body = typeof e.body === "string" ? e.body : e.body ? JSON.stringify(e.body) : "";
  const fromBody = /"message":"([^"]*)"/.exec(body)?.[1];
  return (fromBody ?? e.message ?? String(error)).trim();
}

function codeOf(error: unknown): number | undefined {
  return (error as { code?: number }).code;
}

/**
 * The pod a template makes: the template as written, named by Kubernetes (`generateName`), labelled
 * with the session, never restarted (a restarted pod would be a new, empty workspace). What runs,
 * its resources, security context and network policy are the template's: the platform's choice.
 */
export function podFromTemplate(template: Record<string, unknown>, session: string): Record<string, unknown> {
  const metadata = (template.metadata ?? {}) as Record<string, unknown>;
  const spec = (template.spec ?? {}) as Record<string, unknown>;
  const { name: _name, ...rest } = metadata;
  return {
    apiVersion: "v1",
    kind: "Pod",
    ...template,
    metadata: {
      ...rest,
      generateName: (metadata.generateName as string | undefined) ?? "toolbelt-",
      labels: {
        ...((metadata.labels as Record<string, string> | undefined) ?? {}),
        [SESSION_LABEL]: session,
      },
    },
    spec: { ...spec, restartPolicy: "Never" },
  };
}

/**
 * A Kubernetes workspace: toolbelt started in a pod with the exec API (`@kubernetes/client-node`),
 * the namespace and context from the user's kubeconfig. With a template, a pod is made for the
 * session and deleted at close.
 */
export class KubernetesDriver implements WorkspaceDriver {
  readonly label: string;
  readonly toolbelt: { command: string[]; how: string };
  readonly #k8s: typeof K8s;
  readonly #config: K8s.KubeConfig;
  readonly #namespace: string;
  readonly #pod: string;
  readonly #container: string;
  readonly #owned: boolean;
  #closed = false;

  private constructor(
    k8s: typeof K8s,
    config: K8s.KubeConfig,
    where: { namespace: string; pod: string; container: string; owned: boolean },
    command: string[] | undefined,
  ) {
    this.#k8s = k8s;
    this.#config = config;
    this.#namespace = where.namespace;
    this.#pod = where.pod;
    this.#container = where.container;
    this.#owned = where.owned;
    this.label = `kubernetes pod ${where.namespace}/${where.pod}`;
    this.toolbelt = command
      ? { command, how: "the workspace's command option" }
      : { command: ["toolbelt"], how: "toolbelt on the container's PATH" };
  }

  static async open(spec: KubernetesWorkspace, context: { session: string }): Promise<KubernetesDriver> {
    const k8s = await import("@kubernetes/client-node");
    const config = new k8s.KubeConfig();
    try {
      if (spec.kubeconfig) config.loadFromFile(spec.kubeconfig);
      else config.loadFromDefault();
      if (spec.context) config.setCurrentContext(spec.context);
    } catch (error) {
      throw workspaceError(
        `cannot load the kubeconfig: ${messageOf(error)}`,
        { workspace: "kubernetes" },
        error,
      );
    }
    const current = config.getContextObject(config.getCurrentContext());
    if (!current)
      throw workspaceError(
        `no kubeconfig context ${JSON.stringify(config.getCurrentContext())} (set one with the workspace's context option or kubectl config use-context)`,
        { workspace: "kubernetes" },
      );
    const namespace = spec.namespace ?? current.namespace ?? "default";
    const api = config.makeApiClient(k8s.CoreV1Api);
    let pod: K8s.V1Pod;
    let owned = false;
    try {
      if (spec.pod) {
        pod = await api.readNamespacedPod({ name: spec.pod, namespace });
      } else {
        const template = templateOf(k8s, spec.template as string | Record<string, unknown>);
        pod = await api.createNamespacedPod({
          namespace,
          body: podFromTemplate(template, context.session) as K8s.V1Pod,
        });
        owned = true;
      }
    } catch (error) {
      throw workspaceError(
        codeOf(error) === 404
          ? `no pod ${spec.pod} in namespace ${namespace}`
          : `cannot reach the Kubernetes API of context ${current.name}: ${messageOf(error)}`,
        { workspace: "kubernetes", namespace, ...(spec.pod ? { pod: spec.pod } : {}) },
        error,
      );
    }
    const name = pod.metadata?.name as string;
    const container = spec.container ?? pod.spec?.containers[0]?.name;
    const driver = new KubernetesDriver(
      k8s,
      config,
      { namespace, pod: name, container: container ?? "", owned },
      spec.command,
    );
    try {
      if (!container)
        throw workspaceError(`pod ${namespace}/${name} has no container`, { workspace: "kubernetes" });
      if (owned) pod = await driver.#waitRunning(api);
      if (pod.status?.phase !== "Running")
        throw workspaceError(
          `pod ${namespace}/${name} is not running (${pod.status?.phase ?? "unknown phase"})`,
          {
            workspace: "kubernetes",
          },
        );
    } catch (error) {
      await driver.close();
      throw error;
    }
    return driver;
  }

  async #waitRunning(api: K8s.CoreV1Api): Promise<K8s.V1Pod> {
    const deadline = Date.now() + POD_START_MS;
    for (;;) {
      const pod = await api.readNamespacedPod({ name: this.#pod, namespace: this.#namespace });
      const phase = pod.status?.phase;
      if (phase === "Running" || phase === "Succeeded" || phase === "Failed") return pod;
      if (Date.now() > deadline)
        throw workspaceError(
          `pod ${this.#namespace}/${this.#pod} was not running after ${POD_START_MS / 1000} s (${phase ?? "no phase"})`,
          { workspace: "kubernetes" },
        );
      await new Promise((resolve) => setTimeout(resolve, POD_POLL_MS));
    }
  }

  async start(argv: string[], cwd: string): Promise<Channel> {
    const stdout = new PassThrough();
    const errors = new PassThrough();
    const stdin = new PassThrough();
    const stderr = new Tail();
    errors.on("data", (chunk: Buffer) => stderr.push(chunk));
    let settle: (value: { code?: number | null; reason: string }) => void = () => {};
    const ended = new Promise<{ code?: number | null; reason: string }>((resolve) => {
      settle = (value) => {
        stdout.end();
        resolve(value);
      };
    });
    // The exec API runs an argv, not a shell line: the working directory is set by a small shell.
    const command = ["sh", "-c", 'cd "$0" && exec "$@"', cwd, ...argv];
    let socket: Awaited<ReturnType<K8s.Exec["exec"]>>;
    try {
      socket = await new this.#k8s.Exec(this.#config).exec(
        this.#namespace,
        this.#pod,
        this.#container,
        command,
        stdout,
        errors,
        stdin,
        false,
        (status) =>
          settle({
            code: status.status === "Success" ? 0 : Number(status.details?.causes?.[0]?.message ?? 1),
            reason: status.message ?? `the command ended (${status.status})`,
          }),
      );
    } catch (error) {
      throw workspaceError(
        `cannot exec in ${this.label}: ${messageOf(error)}`,
        { workspace: "kubernetes" },
        error,
      );
    }
    socket.on("close", () => settle({ reason: "the exec connection closed" }));
    socket.on("error", (error: Error) => settle({ reason: `the exec connection failed: ${error.message}` }));
    return { stdin, stdout, stderrTail: () => stderr.text, ended, destroy: () => socket.terminate() };
  }

  async run(argv: string[], cwd: string): Promise<RunResult> {
    return collect(await this.start(argv, cwd));
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    if (!this.#owned) return;
    const api = this.#config.makeApiClient(this.#k8s.CoreV1Api);
    try {
      await api.deleteNamespacedPod({ name: this.#pod, namespace: this.#namespace, gracePeriodSeconds: 0 });
    } catch (error) {
      if (codeOf(error) !== 404) throw error;
    }
  }
}

function templateOf(k8s: typeof K8s, template: string | Record<string, unknown>): Record<string, unknown> {
  if (typeof template !== "string") return template;
  let text: string;
  try {
    text = readFileSync(template, "utf8");
  } catch (error) {
    throw workspaceError(`cannot read the pod template ${template}: ${(error as Error).message}`, {
      workspace: "kubernetes",
    });
  }
  const value = k8s.loadYaml<unknown>(text);
  if (typeof value !== "object" || value === null || Array.isArray(value))
    throw workspaceError(`the pod template ${template} is not a Pod manifest`, { workspace: "kubernetes" });
  return value as Record<string, unknown>;
}
