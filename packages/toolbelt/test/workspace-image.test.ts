import { spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { cpSync, readFileSync, realpathSync, writeFileSync } from "node:fs";
import http from "node:http";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { lacks } from "../../../test-support/capability.js";
import { assertBuilt, cli, jsonLines, REPO, tempRoot } from "./cli-harness.js";
import { type Registry, startRegistry } from "./npm-registry-fixture.js";
import {
  allSessionContainers,
  BASE_IMAGE,
  dockerMissing,
  dockerSocket,
  engine,
} from "./workspace-fixtures.js";

// docker/Dockerfile, built here as a user builds it, and used as a Docker workspace: the session runs
// the image's own toolbelt (its dev.toolbelt.* labels), nothing of this machine's mounted. No image
// can be pulled here, so its Node base is made from the debootstrap image and this machine's Node and
// npm (like the official Node images: node and npm in /usr/local, a `node` user); @toolbelt/* comes
// from this checkout's packed packages through a loopback registry (npm-registry-fixture.ts).

const skipDocker = lacks("docker", await dockerMissing());
const DOCKER_HOST = process.env.TOOLBELT_TEST_DOCKER_HOST ?? "";

const IMAGE = `toolbelt-test-workspace:${randomUUID().slice(0, 8)}`;

function npmDir(): string {
  // npm's own directory, from the npm beside this Node (…/npm/bin/npm-cli.js).
  return path.dirname(path.dirname(realpathSync(path.join(path.dirname(process.execPath), "npm"))));
}

function npmVersion(): string {
  return (JSON.parse(readFileSync(path.join(npmDir(), "package.json"), "utf8")) as { version: string })
    .version;
}

/** A step of a build and the image it made (`cached`: reused from an earlier build). */
interface Layer {
  step: string;
  id: string;
  cached: boolean;
}

/**
 * Builds `dir` (its Dockerfile) with the daemon's builder, and says which image each step made; throws
 * with the build's last lines on failure.
 */
function buildImage(dir: string, tag: string, query: Record<string, string>): Promise<Layer[]> {
  const socketPath = dockerSocket();
  if (!socketPath) throw new Error("TOOLBELT_TEST_DOCKER_HOST is not set");
  const params = new URLSearchParams({ t: tag, rm: "1", forcerm: "1", ...query });
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        socketPath,
        path: `/build?${params}`,
        method: "POST",
        headers: { "content-type": "application/x-tar" },
      },
      (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (d: string) => {
          text += d;
        });
        res.on("end", () => {
          const lines = jsonLines(text) as Array<{ stream?: string; error?: string }>;
          const failed = res.statusCode !== 200 || lines.some((l) => l.error);
          const log = lines.map((l) => l.stream ?? l.error ?? "").join("");
          if (!failed) return resolve(layersOf(log));
          reject(new Error(`docker build of ${tag} failed (${res.statusCode}):\n${log.slice(-4000)}`));
        });
      },
    );
    req.on("error", reject);
    const tar = spawn("tar", ["-C", dir, "-c", "."], { stdio: ["ignore", "pipe", "inherit"] });
    tar.on("error", reject);
    tar.stdout.pipe(req);
  });
}

/** The images a build's steps made, from its log (`Step i/n : …`, then ` ---> ID`). */
function layersOf(log: string): Layer[] {
  const layers: Layer[] = [];
  let step = "";
  let cached = false;
  for (const line of log.split("\n")) {
    const header = /^Step \d+\/\d+ : (.*)$/.exec(line);
    if (header) {
      step = header[1] as string;
      cached = false;
    } else if (/^ ---> Using cache$/.test(line)) cached = true;
    else {
      const made = /^ ---> ([0-9a-f]{12})$/.exec(line);
      if (made && !/^FROM /i.test(step)) layers.push({ step, id: made[1] as string, cached });
    }
  }
  return layers;
}

/**
 * The stand-in for an official Node image, made unless the daemon has it: kept across runs, as
 * scripts/ci/docker-up.sh keeps its base image, under a tag naming the Node and npm it holds.
 */
async function nodeImage(): Promise<string> {
  const tag = `toolbelt-test-node:${process.version}-npm${npmVersion()}`;
  if ((await engine("GET", `/images/${encodeURIComponent(tag)}/json`)).status === 200) return tag;
  const dir = tempRoot("tb-node-image-");
  cpSync(realpathSync(process.execPath), path.join(dir, "node"));
  cpSync(npmDir(), path.join(dir, "npm"), { recursive: true });
  writeFileSync(
    path.join(dir, "Dockerfile"),
    [
      `FROM ${BASE_IMAGE}`,
      "COPY node /usr/local/bin/node",
      "COPY npm /usr/local/lib/node_modules/npm",
      "RUN ln -s ../lib/node_modules/npm/bin/npm-cli.js /usr/local/bin/npm && useradd --create-home --uid 1000 node",
      "",
    ].join("\n"),
  );
  await buildImage(dir, tag, {});
  return tag;
}

/**
 * Removes the images the Dockerfile's build made: the image with its layers, then its install stage's
 * layers newest first, but for the compiler's: kept (untagged) as the build cache, so that the next
 * build on this daemon skips apt. A layer reused from the cache is not this build's to remove.
 */
async function removeBuilt(layers: Layer[]): Promise<void> {
  await engine("DELETE", `/images/${encodeURIComponent(IMAGE)}`);
  for (const layer of layers.filter((l) => !l.cached && !/^RUN apt-get /.test(l.step)).reverse())
    await engine("DELETE", `/images/${layer.id}?noprune=true`);
}

function project(): string {
  const root = tempRoot("tb-ws-image-");
  writeFileSync(path.join(root, "a.txt"), "alpha\nneedle one\n");
  return root;
}

type Check = { family: string; name: string; status: string; detail: string };

describe.skipIf(skipDocker)(
  "docker/Dockerfile: an image with toolbelt installed (built here, used as a workspace)",
  () => {
    let registry: Registry | undefined;
    let built: Layer[] = [];

    beforeAll(async () => {
      assertBuilt();
      const seconds = (since: number) => Math.round((Date.now() - since) / 1000);
      let started = Date.now();
      registry = await startRegistry();
      const packed = seconds(started);
      started = Date.now();
      const NODE_IMAGE = await nodeImage();
      const base = seconds(started);
      // As a user builds it, with the registry changed; on the host's network, for the loopback
      // registry, which is the build's HTTP proxy too (a predefined build argument, kept out of the image).
      started = Date.now();
      built = await buildImage(path.join(REPO, "docker"), IMAGE, {
        buildargs: JSON.stringify({
          NODE_IMAGE,
          TOOLBELT_VERSION: registry.version,
          NPM_CONFIG_REGISTRY: registry.url,
          http_proxy: registry.url,
          no_proxy: "127.0.0.1",
        }),
        networkmode: "host",
      });
      // What the file's time goes to (the build's is the most of it).
      console.info(
        `packed in ${packed} s, Node base image ready in ${base} s, docker/Dockerfile built in ${seconds(started)} s`,
      );
    }, 600_000);

    afterAll(async () => {
      await registry?.stop();
      if (!skipDocker) await removeBuilt(built);
    });

    it("the image is labelled with its Node and toolbelt and runs as a non-root user", async () => {
      const inspected = await engine("GET", `/images/${encodeURIComponent(IMAGE)}/json`);
      const config = (inspected.body as { Config: { Labels: Record<string, string>; User: string } }).Config;
      expect(config.Labels).toMatchObject({
        "dev.toolbelt.node": "/opt/toolbelt/bin/node",
        "dev.toolbelt.bin": "/opt/toolbelt/lib/node_modules/@toolbelt/toolbelt/bin/toolbelt.js",
      });
      expect(config.User).toBe("node");
    });

    it("toolbelt run with --workspace docker-image:IMAGE reads, searches and runs the shell in a container of the image", async () => {
      const root = project();
      const args = ["--workspace", `docker-image:${IMAGE}`, "--root", root];
      const env = { DOCKER_HOST };
      const read = await cli(["run", "read_file", ...args, "--input", '{"path":"a.txt"}'], {
        env,
        timeoutMs: 75_000,
      });
      expect(read.code, read.stderr).toBe(0);
      expect(read.stdout).toContain("needle one");
      // ripgrep, from the image's installation.
      const search = await cli(["run", "search_files", ...args, "--input", '{"query":"needle"}'], {
        env,
        timeoutMs: 75_000,
      });
      expect(search.code, search.stderr).toBe(0);
      expect(search.stdout).toContain("a.txt");
      const command = [
        // The image's installation is on its PATH (for `docker:NAME` and pods), the compiler is not.
        "command -v toolbelt",
        "command -v gcc cc || echo no-compiler",
      ].join("; ");
      const shell = await cli(
        ["run", "shell", ...args, "--allow", "shell", "--input", JSON.stringify({ command })],
        { env, timeoutMs: 75_000 },
      );
      expect(shell.code, shell.stderr).toBe(0);
      expect(shell.stdout).toContain("/opt/toolbelt/bin/toolbelt");
      expect(shell.stdout).toContain("no-compiler");
      expect(await allSessionContainers()).toEqual([]);
    });

    it("doctor --workspace docker-image:IMAGE says the image's own toolbelt is used, with its ripgrep and sandbox helper", async () => {
      const root = project();
      const result = await cli(
        ["doctor", "--format", "json", "--workspace", `docker-image:${IMAGE}`, "--root", root],
        { env: { DOCKER_HOST }, timeoutMs: 75_000 },
      );
      expect(result.code, result.stderr).toBe(0);
      const checks = JSON.parse(result.stdout) as Check[];
      const find = (family: string, name: string) =>
        checks.find((c) => c.family === family && c.name === name);
      expect(find("workspace", "toolbelt")?.detail).toMatch(/the image's own toolbelt/);
      expect(find("workspace:files", "search")?.detail).toContain("/opt/toolbelt/lib/node_modules/");
      expect(find("workspace:shell", "sandbox-helper")?.status).toBe("ok");
      expect(await allSessionContainers()).toEqual([]);
    });
  },
);
