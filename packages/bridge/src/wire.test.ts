import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { HttpError, matchRoute, noRoute, ROUTES, routePath } from "./wire.js";

const readme = readFileSync(new URL("../README.md", import.meta.url), "utf8");

/** The `METHOD /path` cells of the README's route table (its first column). */
function documentedRoutes(): string[] {
  return [...readme.matchAll(/^\| `(GET|POST|PUT|DELETE) (\/[^`]*)` +\|/gm)].map((m) => `${m[1]} ${m[2]}`);
}

describe("the route table", () => {
  it("is the route list the README documents, in the same order", () => {
    const table = Object.values(ROUTES).map((r) => `${r.method} ${r.path}`);
    expect(documentedRoutes()).toEqual(table);
  });

  it("matches each route's own path back to it, with the parameters decoded", () => {
    for (const [name, spec] of Object.entries(ROUTES)) {
      const path = spec.path.replace(/:([a-z_]+)/g, (_m, key: string) => encodeURIComponent(`${key} /é`));
      const match = matchRoute(spec.method, path);
      expect(match?.name).toBe(name);
      for (const value of Object.values(match?.params ?? {})) expect(value).toMatch(/^[a-z_]+ \/é$/);
    }
  });

  it("builds paths with every parameter percent-encoded", () => {
    expect(routePath("cancelCall", { id: "s/1", call_id: "c?1" })).toBe(
      "/api/sessions/s%2F1/calls/c%3F1/cancel",
    );
    expect(routePath("listSessions", {})).toBe("/api/sessions");
  });

  it("answers a malformed escape with 400, and what matches nothing with 404 or 405", () => {
    expect(() => matchRoute("GET", "/api/sessions/%E0%A4%A/tools")).toThrow(
      expect.objectContaining({ status: 400, code: "EINVAL_INPUT" }),
    );
    expect(matchRoute("GET", "/api/sessions/s1/nothing")).toBeUndefined();
    const has = (id: string) => id === "s1";
    expect(noRoute("PATCH", "/api/sessions", has)).toMatchObject({ status: 405, code: "EINVAL_INPUT" });
    expect(noRoute("GET", "/api/sessions/s2/nothing", has)).toMatchObject({ status: 404, code: "ENOENT" });
    expect(noRoute("GET", "/api/sessions/s1/nothing", has).message).toContain("no route");
    expect(noRoute("GET", "/elsewhere", has)).toBeInstanceOf(HttpError);
  });
});
