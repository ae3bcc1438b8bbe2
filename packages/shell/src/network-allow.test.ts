import { describe, expect, it } from "vitest";
import {
  type AllowEntry,
  canonicalIp,
  covers,
  decide,
  parseAllowEntry,
  parseTarget,
  specialAddress,
  type Target,
} from "./network-allow.js";

function entry(text: string): AllowEntry {
  const e = parseAllowEntry(text);
  if (typeof e === "string") throw new Error(e);
  return e;
}

function target(text: string): Target {
  const t = parseTarget(text);
  if (typeof t === "string") throw new Error(t);
  return t;
}

describe("allow list entries", () => {
  it("reads names, wildcards, IPs and ports, and refuses what would widen or confuse", () => {
    expect(entry("Registry.NPMJS.org")).toMatchObject({
      kind: "name",
      host: "registry.npmjs.org",
      port: undefined,
    });
    expect(entry("*.github.com:8443")).toMatchObject({ kind: "wildcard", host: "github.com", port: 8443 });
    expect(entry("[::1]:80")).toMatchObject({ kind: "ip", host: "::1", port: 80 });
    expect(entry("10.0.0.5")).toMatchObject({ kind: "ip", host: "10.0.0.5" });
    for (const bad of [
      "*",
      "*.",
      "*.10.0.0.1",
      "host:0",
      "host:70000",
      "a..b",
      "127.1",
      "0x7f000001",
      "",
      "ex ample.com",
    ])
      expect(typeof parseAllowEntry(bad), bad).toBe("string");
    expect(typeof parseTarget(`${"a".repeat(60)}.`.repeat(5))).toBe("string");
  });

  it("a wildcard covers subdomains only, on the default ports unless a port is listed", () => {
    const list = [entry("*.github.com"), entry("registry.npmjs.org:8080")];
    expect(decide(list, target("api.github.com"), 443).allowed).toBe(true);
    expect(decide(list, target("github.com"), 443).allowed).toBe(false);
    expect(decide(list, target("evilgithub.com"), 443).allowed).toBe(false);
    expect(decide(list, target("api.github.com"), 22)).toMatchObject({
      allowed: false,
      why: expect.stringMatching(/port 22/),
    });
    expect(decide(list, target("registry.npmjs.org"), 443).allowed).toBe(false);
    expect(decide(list, target("registry.npmjs.org"), 8080)).toEqual({ allowed: true, explicitPort: true });
    expect(decide(list, target("10.0.0.1"), 443).allowed).toBe(false);
  });

  it("an untrusted list is within the user's only when every entry is covered", () => {
    expect(covers(entry("*.github.com"), entry("api.github.com"))).toBe(true);
    expect(covers(entry("*.github.com"), entry("*.api.github.com"))).toBe(true);
    expect(covers(entry("api.github.com"), entry("*.api.github.com"))).toBe(false);
    expect(covers(entry("host:443"), entry("host"))).toBe(false);
    expect(covers(entry("host"), entry("host:443"))).toBe(true);
    expect(covers(entry("*.github.com"), entry("10.0.0.1"))).toBe(false);
  });
});

describe("special addresses", () => {
  it("loopback, private, link-local and IPv4 inside IPv6 are special; public ones are not", () => {
    for (const ip of [
      "127.0.0.1",
      "10.1.2.3",
      "172.16.0.1",
      "192.168.1.1",
      "169.254.169.254",
      "100.64.0.1",
      "0.0.0.0",
    ])
      expect(specialAddress(ip), ip).toBeDefined();
    for (const ip of [
      "::1",
      "::",
      "fe80::1",
      "fd00::1",
      "::ffff:127.0.0.1",
      "64:ff9b::a9fe:a9fe",
      "2002:7f00:1::",
    ])
      expect(specialAddress(ip), ip).toBeDefined();
    for (const ip of ["8.8.8.8", "140.82.112.3", "2606:4700::1111"])
      expect(specialAddress(ip), ip).toBeUndefined();
    expect(canonicalIp("::ffff:7f00:1")).toBe("127.0.0.1");
    expect(canonicalIp("0:0:0:0:0:0:0:1")).toBe("::1");
  });
});
