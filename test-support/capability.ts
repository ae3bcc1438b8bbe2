// The one way a test skips for something this machine lacks. Every capability a test may need is
// listed here with whether CI provides it: `.ci/run` installs it, or it is a given of the machine CI
// runs on. Under CI=true a missing capability that CI provides is a failure naming it (an attack test
// must not quietly become a skip because an install step broke); any other missing capability skips,
// with the reason logged when the test runs.
import type { TestContext } from "vitest";

type Provided = { readonly ci: true; readonly how: string } | { readonly ci: false; readonly why: string };

export const CAPABILITIES = {
  linux: { ci: true, how: ".ci/run runs on Debian Linux (/proc, mkfifo, /dev/zero)" },
  ripgrep: { ci: true, how: "npm ci installs @vscode/ripgrep and its binary" },
  "sandbox-helper": {
    ci: true,
    how: ".ci/run installs gcc; @toolbelt/shell's build compiles packages/shell/bin/toolbelt-sandbox",
  },
  gcc: { ci: true, how: ".ci/run installs gcc and libc6-dev" },
  chromium: { ci: true, how: ".ci/run installs Debian's chromium" },
  deno: { ci: true, how: "npm ci installs the root devDependency deno" },
  tsgo: { ci: true, how: "npm ci installs @typescript/native-preview (a devDependency of @toolbelt/lsp)" },
  "typescript-language-server": {
    ci: true,
    how: "npm ci installs typescript-language-server (a dependency of @toolbelt/lsp)",
  },
  python3: { ci: true, how: ".ci/run installs python3" },
  "gnu-time": { ci: true, how: ".ci/run installs GNU time (/usr/bin/time)" },
  script: { ci: true, how: ".ci/run installs util-linux's script (bsdutils)" },
  nsenter: { ci: true, how: ".ci/run installs util-linux's nsenter" },
  docker: {
    ci: true,
    how: "scripts/ci/docker-up.sh starts a private dockerd (its socket in TOOLBELT_TEST_DOCKER_HOST) and imports the debootstrap image toolbelt-base:bookworm",
  },
  sshd: {
    ci: true,
    how: ".ci/run installs openssh-server (the tests run their own sshd on a loopback port)",
  },
  kubernetes: {
    ci: false,
    why: "no cluster can be started here: a kubeconfig (KUBECONFIG or ~/.kube/config) naming a reachable cluster, and TOOLBELT_TEST_K8S_IMAGE, an image with Node 20+, sh and toolbelt installed that the cluster can pull",
  },
  landlock: { ci: false, why: "a kernel feature (Linux 5.13 or later, with Landlock enabled)" },
  "landlock-network": { ci: false, why: "Landlock ABI 4 or later (Linux 6.7 or later)" },
  "network-namespace": {
    ci: false,
    why: "the kernel and the container must let the sandbox helper make a network namespace",
  },
  "mount-namespace": {
    ci: false,
    why: "the kernel and the container must let the sandbox helper make a private mount namespace",
  },
  "process-tracking": {
    ci: false,
    why: "a cgroup the sandbox can create for each command, or the helper's watcher",
  },
  "memory-cgroup": {
    ci: false,
    why: "a cgroup with the memory controller that the sandbox can create for each command",
  },
  "process-cap": { ci: false, why: "a cgroup the sandbox can create, or RLIMIT_NPROC for its user" },
  "quiet-mmap-write": {
    ci: false,
    why: "a write through a mapped page leaves the file's stat as it was only until the kernel writes the page back",
  },
  "immutable-files": {
    ci: false,
    why: "chattr +i needs CAP_LINUX_IMMUTABLE and a filesystem that supports it",
  },
  "require-esm": { ci: false, why: "require() of ES modules: Node 20.19 or later, or 22.12 or later" },
} as const satisfies Record<string, Provided>;

export type Capability = keyof typeof CAPABILITIES;

/** Whether this run is CI's (`.ci/run` exports CI=true, as CI services do). */
export function underCi(): boolean {
  return process.env.CI === "true" || process.env.CI === "1";
}

function refusal(capability: Capability, missing: string): Error {
  const provided = CAPABILITIES[capability] as Provided;
  return new Error(
    `${capability} is missing under CI=true (${missing}), and CI provides it: ${provided.ci ? provided.how : ""}. Fix the CI machine (or .ci/run); the test does not skip there.`,
  );
}

const logged = new Set<string>();

function note(capability: Capability, missing: string, test?: string): string {
  const provided = CAPABILITIES[capability] as Provided;
  const why = provided.ci ? "" : `; CI cannot provide it either: ${provided.why}`;
  return `skipped${test ? ` "${test}"` : ""}: needs ${capability}, missing here (${missing})${why}`;
}

/**
 * For `it.skipIf(...)` and `describe.skipIf(...)`: true when `missing` (why this machine lacks
 * `capability`; undefined, "" or false when it has it) says to skip, and the reason is logged. Under
 * CI=true a capability CI provides is never skipped: this throws, and the test file fails naming it.
 */
export function lacks(capability: Capability, missing: string | false | undefined): boolean {
  if (!missing) return false;
  if (underCi() && CAPABILITIES[capability].ci) throw refusal(capability, missing);
  const line = note(capability, missing);
  if (!logged.has(line)) {
    logged.add(line);
    console.warn(line);
  }
  return true;
}

/**
 * Inside a test, for what is known only once it runs (what the built CLI's doctor reports): skips the
 * test with the reason (logged, and shown beside it by the reporter) when `missing` says this machine
 * lacks `capability`; under CI=true a capability CI provides fails the test instead.
 */
export function need(ctx: TestContext, capability: Capability, missing: string | false | undefined): void {
  if (!missing) return;
  if (underCi() && CAPABILITIES[capability].ci) throw refusal(capability, missing);
  const line = note(capability, missing, ctx.task.name);
  console.warn(line);
  ctx.skip(line);
}
