import { readFileSync } from "node:fs";

/** This package's version, as its package.json says. */
export function version(): string {
  const pkg = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as {
    version: string;
  };
  return pkg.version;
}
