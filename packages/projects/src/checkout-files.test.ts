import { execFileSync } from "node:child_process";
import {
  mkdirSync,
  mkdtempSync,
  realpathSync,
  rmSync,
  symlinkSync,
  truncateSync,
  writeFileSync,
} from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { lacks } from "../../../test-support/capability.js";
import {
  MAX_INSTRUCTION_BYTES,
  projectSkills,
  readInstructions,
  readSkill,
  type SkippedFile,
} from "./index.js";
import { MAX_INSTRUCTION_CHARS } from "./instructions.js";

// A project's own files reach the model (instructions, skills): each is read only inside the project,
// only when it is a regular file, and bounded. End to end: toolbelt/test/reliability/checkout-files.test.ts.

const notLinux = lacks(
  "linux",
  process.platform !== "linux" && `FIFOs and /dev/zero: this is ${process.platform}`,
);
let base: string;
let outside: string;
const skill = (name: string) => `---\nname: ${name}\ndescription: "${name} SECRET"\n---\nbody\n`;

function write(file: string, text: string): void {
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, text);
}

function link(target: string, file: string): void {
  mkdirSync(path.dirname(file), { recursive: true });
  symlinkSync(target, file);
}

function project(name: string): string {
  const dir = path.join(base, name);
  mkdirSync(dir);
  return dir;
}

beforeAll(() => {
  base = realpathSync(mkdtempSync(path.join(os.tmpdir(), "tb-checkout-files-")));
  outside = path.join(base, "outside");
  write(path.join(outside, "secret"), "SECRET\n");
  write(path.join(outside, "SKILL.md"), skill("leak"));
  write(path.join(outside, "skills", "a", "SKILL.md"), skill("leak-a"));
});
afterAll(() => rmSync(base, { recursive: true, force: true }));

describe("readInstructions", () => {
  it("skips AGENTS.md pointing outside, says why, and reads the project's own CLAUDE.md", () => {
    const root = project("mixed");
    link(path.join(outside, "secret"), path.join(root, "AGENTS.md"));
    write(path.join(root, "CLAUDE.md"), "Use tabs.\n");
    const { instructions, skipped } = readInstructions(root);
    expect(instructions).toEqual({ file: "CLAUDE.md", content: "Use tabs.\n", chars: 10, truncated: false });
    expect(skipped).toEqual([{ file: "AGENTS.md", reason: expect.stringContaining("points outside") }]);
    expect(JSON.stringify(skipped)).not.toContain("SECRET");
  });

  it("a symlink inside the project is read", () => {
    const root = project("inside");
    write(path.join(root, "docs", "agents.md"), "Inside.\n");
    link("docs/agents.md", path.join(root, "AGENTS.md"));
    expect(readInstructions(root)).toEqual({
      instructions: { file: "AGENTS.md", content: "Inside.\n", chars: 8, truncated: false },
      skipped: [],
    });
  });

  it.skipIf(notLinux)("a FIFO is skipped at once, not waited on", () => {
    const root = project("fifo");
    execFileSync("mkfifo", [path.join(root, "AGENTS.md")]);
    const { instructions, skipped } = readInstructions(root);
    expect(instructions).toBeUndefined();
    expect(skipped[0]?.reason).toContain("is a FIFO");
  });

  it("cuts a file over the character limit as before, and one over the byte limit without reading it all", () => {
    const root = project("long");
    write(path.join(root, "AGENTS.md"), "x".repeat(MAX_INSTRUCTION_CHARS + 5));
    expect(readInstructions(root).instructions).toMatchObject({
      chars: MAX_INSTRUCTION_CHARS + 5,
      truncated: true,
    });
    expect(readInstructions(root).instructions).not.toHaveProperty("bytes");
    truncateSync(path.join(root, "AGENTS.md"), 2 * 1024 ** 3);
    const huge = readInstructions(root).instructions;
    expect(huge).toMatchObject({ truncated: true, bytes: 2 * 1024 ** 3, chars: MAX_INSTRUCTION_BYTES });
    expect(huge?.content.length).toBe(MAX_INSTRUCTION_CHARS);
  });
});

describe("project skills", () => {
  it("a SKILL.md, or a skills folder, pointing outside is skipped and noted; the project's own are read", () => {
    const root = project("skills");
    write(path.join(root, ".toolbelt", "skills", "own", "SKILL.md"), skill("own"));
    link(path.join(outside, "SKILL.md"), path.join(root, ".toolbelt", "skills", "leak", "SKILL.md"));
    link(path.join(outside, "skills"), path.join(root, ".claude", "skills"));
    const skipped: SkippedFile[] = [];
    const skills = projectSkills(root, skipped);
    expect(skills.map((s) => s.name)).toEqual(["own"]);
    expect(skipped.map((s) => s.file)).toEqual([".toolbelt/skills/leak/SKILL.md", ".claude/skills"]);
  });

  it.skipIf(notLinux)("a FIFO SKILL.md and one linked to /dev/zero are skipped at once", () => {
    const root = project("skill-fifo");
    mkdirSync(path.join(root, ".toolbelt", "skills", "f"), { recursive: true });
    execFileSync("mkfifo", [path.join(root, ".toolbelt", "skills", "f", "SKILL.md")]);
    link("/dev/zero", path.join(root, ".toolbelt", "skills", "z", "SKILL.md"));
    const skipped: SkippedFile[] = [];
    expect(projectSkills(root, skipped)).toEqual([]);
    expect(skipped.map((s) => s.reason)).toEqual([
      expect.stringContaining("is a FIFO"),
      expect.stringContaining("points outside"),
    ]);
    // The user's own skills follow symlinks, but /dev/zero is still no regular file.
    expect(readSkill(path.join(root, ".toolbelt", "skills", "z", "SKILL.md"))).toBeUndefined();
  });

  it("the user's own skills (no root) may be symlinks to files elsewhere", () => {
    const root = project("user-skills");
    link(path.join(outside, "SKILL.md"), path.join(root, "SKILL.md"));
    expect(readSkill(path.join(root, "SKILL.md"))?.name).toBe("leak");
    expect(readSkill(path.join(root, "SKILL.md"), { root })).toBeUndefined();
  });

  it("a SKILL.md over 256 KiB is skipped and noted", () => {
    const root = project("big-skill");
    write(path.join(root, ".toolbelt", "skills", "big", "SKILL.md"), skill("big") + "x".repeat(256 * 1024));
    const skipped: SkippedFile[] = [];
    expect(projectSkills(root, skipped)).toEqual([]);
    expect(skipped[0]?.reason).toContain("is larger than 262144 bytes");
  });
});
