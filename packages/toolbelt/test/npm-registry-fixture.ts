import { execFileSync } from "node:child_process";
import { createReadStream, readFileSync } from "node:fs";
import http from "node:http";
import https from "node:https";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { REPO, tempRoot } from "./cli-harness.js";

// An npm registry on loopback for building docker/Dockerfile here, where @toolbelt/* is not published
// and a container cannot verify registry.npmjs.org (this machine's TLS goes through a CA that only
// the host trusts): it serves this checkout's packed packages as if they were published, and passes
// every other request on to registry.npmjs.org with the host's trust. The image is then built the
// way a user builds it — `npm install -g @toolbelt/toolbelt` — with only the registry changed.

const UPSTREAM = "https://registry.npmjs.org";

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
  /** The registry's URL (`http://127.0.0.1:PORT/`), reachable from a build on the host's network. */
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
    const url = req.url ?? "/";
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
    // Everything else is npmjs.org's, fetched with this process's trust (NODE_EXTRA_CA_CERTS).
    const upstream = https.request(
      `${UPSTREAM}${url}`,
      {
        method: req.method,
        headers: {
          accept: req.headers.accept ?? "*/*",
          "accept-encoding": req.headers["accept-encoding"] ?? "identity",
        },
      },
      (answer) => {
        const headers = { ...answer.headers };
        delete headers.connection;
        delete headers["transfer-encoding"];
        res.writeHead(answer.statusCode ?? 502, headers);
        answer.pipe(res);
      },
    );
    upstream.on("error", (error) => {
      res.writeHead(502, { "content-type": "text/plain" });
      res.end(`upstream: ${error.message}`);
    });
    upstream.end();
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
