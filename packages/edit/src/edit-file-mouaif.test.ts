import { promises as fs } from "node:fs";
import os from "node:os";
import path from "node:path";
import { createSession, type Payload, type Session } from "@toolbelt/core";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { family } from "./index.js";

let root: string;
let s: Session;

beforeEach(async () => {
  root = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), "tb-edit-mouaif-")));
  await fs.writeFile(path.join(root, "a.txt"), "alpha\nbeta\n");
});
afterEach(async () => {
  await s?.close();
  await fs.rm(root, { recursive: true, force: true });
});

describe("edit_file in the mouaif profile", () => {
  it.each(["claude-opus-4", "gpt-5", "mistral-large", undefined])(
    "is the edit tool bound for model %s",
    async (model) => {
      s = await createSession({ root, plugins: [family], profile: "mouaif", ...(model ? { model } : {}) });
      const names = s.bind().tools.map((t) => t.name);
      // notebook_edit is no backend: it is bound beside the one edit backend.
      expect(names).toEqual(["edit_file", "notebook_edit"]);
      expect(s.editBackend()).toBe("edit_file");
    },
  );

  it("names oldText/newText in its errors, never old_text/new_text", async () => {
    s = await createSession({ root, plugins: [family], profile: "mouaif" });
    const results: Payload[] = [
      await s.call("edit_file", { path: "a.txt", oldText: "", newText: "x" }),
      await s.call("edit_file", { path: "a.txt", oldText: "beta", newText: "beta" }),
      await s.call("edit_file", { path: "a.txt", oldText: "gamma", newText: "x" }),
      await s.call("edit_file", { path: "a.txt", oldText: "   ", newText: "x" }),
      await s.call("edit_file", { path: "nope.txt", oldText: "a", newText: "x" }),
    ];
    for (const r of results) {
      expect(r.kind).toBe("error");
      expect(String(r.message)).toMatch(/oldText/);
      expect(JSON.stringify(r)).not.toMatch(/old_text|new_text/);
    }
  });

  it("keeps old_text in the default profile", async () => {
    s = await createSession({ root, plugins: [family] });
    const r: Payload = await s.call("edit_file", { path: "a.txt", old_text: "gamma", new_text: "x" });
    expect(String(r.message)).toMatch(/^old_text was not found/);
  });
});
