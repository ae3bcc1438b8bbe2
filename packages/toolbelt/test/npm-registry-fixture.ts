import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import {
  createReadStream,
  createWriteStream,
  existsSync,
  mkdirSync,
  readFileSync,
  renameSync,
  rmSync,
} from "node:fs";
import http from "node:http";
import https from "node:https";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { REPO, tempRoot } from "./cli-harness.js";

// An npm registry on loopback for building docker/Dockerfile here, where @toolbelt/* is not published
// and a container cannot verify registry.npmjs.org (this machine's TLS goes through a CA that only
// the host trusts): it serves this checkout's packed packages as if they were published, and passes
// every other request on to registry.npmjs.org with the host's trust. The image is then built the
// way a user builds it — `npm install -g @toolbelt/toolbelt` — with only the registry changed.
// It is the build's HTTP proxy too (apt's downloads). What never changes at its address — npm
// tarballs, Debian's pool files — is kept on disk across runs, as scripts/ci/docker-up.sh keeps its
// rootfs; indexes and package documents are always fetched.

const UPSTREAM = "https://registry.npmjs.org";
const CACHE = path.join(os.homedir(), ".cache", "toolbelt-ci", "dockerfile-build");

/** Where a response that never changes is kept, or undefined for one that may. */
function cacheFile(url: URL): string | undefined {
  const immutable =
    (url.hostname === "registry.npmjs.org" && /\/-\/[^/]+\.tgz$/.test(url.pathname)) ||
    (url.protocol === "http:" && /\/pool\/.+\.deb$/.test(url.pathname));
  if (!immutable) return undefined;
  return path.join(CACHE, createHash("sha256").update(url.href).digest("hex"));
}

/** Answers from the cache, or fetches `url` (with this process's trust) and keeps what never changes. */
function forward(url: URL, req: http.IncomingMessage, res: http.ServerResponse): void {
  const cached = cacheFile(url);
  if (cached && existsSync(cached)) {
    res.writeHead(200, { "content-type": "application/octet-stream" });
    createReadStream(cached).pipe(res);
    return;
  }
  const get = url.protocol === "https:" ? https.request : http.request;
  const upstream = get(
    url,
    {
      method: req.method,
      headers: {
        accept: req.headers.accept ?? "*/*",
        // What is kept is the file itself, never an encoding of it.
        "accept-encoding": cached ? "identity" : (req.headers["accept-encoding"] ?? "identity"),
      },
    },
    (answer) => {
      const headers = { ...answer.headers };
      delete headers.connection;
      delete headers["transfer-encoding"];
      res.writeHead(answer.statusCode ?? 502, headers);
      answer.pipe(res);
      if (!cached || answer.statusCode !== 200) return;
      mkdirSync(CACHE, { recursive: true });
      const part = `${cached}.${process.pid}.part`;
      const out = createWriteStream(part);
      answer.pipe(out);
      out.on("finish", () => {
        if (answer.complete) renameSync(part, cached);
        else rmSync(part, { force: true });
      });
    },
  );
  upstream.on("error", (error) => {
    res.writeHead(502, { "content-type": "text/plain" });
    res.end(`upstream: ${error.message}`);
  });
  upstream.end();
}

/** The packages `npm install -g @toolbelt/toolbelt` needs from this checkout: the CLI and what it imports. */
export function cliPackages(): string[] {
  const seen = new Set<string>();
  const visit = (name: string) => {
    if (seen.has(name)) return;
    seen.add(name);
    const manifest = JSON.parse(readFileSync(path.join(packageDir(name), "package.json"), "utf8")) as {
      dependencies?: Record<string, string>;
    };
    for (const dep of Object.keys(manifest.dependencies ?? {})) if (dep.startsWith("@toolbelt/")) visit(dep);
  };
  visit("@toolbelt/toolbelt");
  return [...seen];
}

function packageDir(name: string): string {
  return path.join(REPO, "packages", name.slice("@toolbelt/".length));
}

interface Packed {
  name: string;
  version: string;
  filename: string;
  integrity: string;
  shasum: string;
}

export interface Registry {
  /** The registry's URL (`http://127.0.0.1:PORT/`), reachable from a build on the host's network; also an HTTP proxy. */
  url: string;
  /** The version of the packed packages (what `@toolbelt/toolbelt@VERSION` installs). */
  version: string;
  stop(): Promise<void>;
}

export async function startRegistry(): Promise<Registry> {
  const dir = tempRoot("tb-packed-");
  const names = cliPackages();
  const packed = JSON.parse(
    execFileSync(
      "npm",
      ["pack", ...names.flatMap((n) => ["-w", n]), "--pack-destination", dir, "--json", "--ignore-scripts"],
      { cwd: REPO, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] },
    ),
  ) as Packed[];
  const ours = new Map(packed.map((p) => [p.name, p]));
  const tarballs = new Map(packed.map((p) => [p.filename, path.join(dir, p.filename)]));
  let base = "";

  const server = http.createServer((req, res) => {
    const target = new URL(req.url ?? "/", base);
    // An absolute URL naming another host is a proxy request: apt's, during the build.
    if (target.host !== new URL(base).host) return forward(target, req, res);
    const url = target.pathname;
    const file = url.startsWith("/-/packed/") ? tarballs.get(url.slice("/-/packed/".length)) : undefined;
    if (file) {
      res.writeHead(200, { "content-type": "application/octet-stream" });
      createReadStream(file).pipe(res);
      return;
    }
    const mine = ours.get(decodeURIComponent(url.slice(1)));
    if (mine) {
      const manifest = JSON.parse(readFileSync(path.join(packageDir(mine.name), "package.json"), "utf8"));
      const tarball = `${base}-/packed/${mine.filename}`;
      res.writeHead(200, { "content-type": "application/json" });
      res.end(
        JSON.stringify({
          name: mine.name,
          "dist-tags": { latest: mine.version },
          versions: {
            [mine.version]: {
              ...manifest,
              _id: `${mine.name}@${mine.version}`,
              dist: { tarball, integrity: mine.integrity, shasum: mine.shasum },
            },
          },
        }),
      );
      return;
    }
    // Everything else is npmjs.org's.
    forward(new URL(`${target.pathname}${target.search}`, UPSTREAM), req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  const version = ours.get("@toolbelt/toolbelt")?.version;
  if (!version) throw new Error("npm pack did not pack @toolbelt/toolbelt");
  return {
    url: base,
    version,
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
