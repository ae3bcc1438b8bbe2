import { describe, expect, it } from "vitest";
import { NETWORK_OFF_NOTE, networkNote, noteNetwork, reportsNetworkFailure } from "./sandbox-denials.js";

describe("the network-off note", () => {
  it("recognises failed connections and lookups in the words of common tools", () => {
    for (const line of [
      "curl: (7) Failed to connect to 192.0.2.2 port 80 after 0 ms: Couldn't connect to server",
      "curl: (6) Could not resolve host: registry.npmjs.org",
      "Error: connect ENETUNREACH 192.0.2.2:443 - Local (0.0.0.0:0)",
      "Error: connect EACCES 127.0.0.1:8080",
      "Error: connect ECONNREFUSED 127.0.0.1:5432",
      "npm error code EAI_AGAIN",
      "getaddrinfo ENOTFOUND example.com",
      "OSError: [Errno 101] Network is unreachable",
      "ssh: Could not resolve hostname github.com: Temporary failure in name resolution",
      "fatal: unable to access 'https://github.com/x/y/': Failed to connect to github.com port 443",
      "wget: unable to resolve host address 'example.com'",
    ]) {
      expect(reportsNetworkFailure(`some output\n${line}\nmore`), line).toBe(true);
    }
  });

  it("stays quiet for output that is not about the network", () => {
    for (const text of [
      "all tests passed\n",
      "cat: x: Permission denied\n",
      "touch: cannot touch '/etc/x': Read-only file system\n",
    ]) {
      expect(reportsNetworkFailure(text), text).toBe(false);
      expect(networkNote("netns", text)).toBeUndefined();
    }
  });

  it("says which mechanism refused, and how to allow it", () => {
    const netns = networkNote("netns", "connect ENETUNREACH 192.0.2.2:80");
    expect(netns).toMatch(new RegExp(`^${NETWORK_OFF_NOTE.replace(/[().]/g, "\\$&")}: .*network namespace`));
    expect(netns).toMatch(/agent\.shell_network to "on"/);
    expect(networkNote("landlock", "connect EACCES 127.0.0.1:80")).toMatch(
      /Landlock refuses every TCP connect/,
    );
  });

  it("replaces the generic refused-access note, and goes before one that names denied paths", () => {
    const generic: { sandbox_note?: string } = { sandbox_note: "the output reports a refused access; ..." };
    noteNetwork(generic, "landlock", "connect EACCES 127.0.0.1:80");
    expect(generic.sandbox_note).toMatch(/^network is off/);
    expect(generic.sandbox_note).not.toContain("refused access");

    const named = {
      sandbox_note: "sandboxed commands may write only under ...",
      sandbox_denied: [{ path: "/etc/x", why: "outside_writable" as const }],
    };
    noteNetwork(named, "netns", "connect ENETUNREACH 192.0.2.2:80\ntouch: /etc/x: Permission denied");
    expect(named.sandbox_note).toMatch(/^network is off.*; sandboxed commands may write only under/);

    const untouched: { sandbox_note?: string } = {};
    noteNetwork(untouched, undefined, "connect ENETUNREACH 192.0.2.2:80");
    noteNetwork(untouched, "netns", "ok\n");
    expect(untouched.sandbox_note).toBeUndefined();
  });
});
