import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import type { Skill } from "@toolbelt/core";

const MAX_SKILL_BYTES = 256 * 1024;

/** toolbelt's user folder: $TOOLBELT_HOME, else ~/.toolbelt. */
export function toolbeltHome(): string {
  return process.env.TOOLBELT_HOME || path.join(os.homedir(), ".toolbelt");
}

/** Reads `key: value` lines of a leading `---` front matter block; quotes around values are dropped. */
export function parseFrontMatter(text: string): { fields: Record<string, string>; body: string } {
  const m = /^\uFEFF?---\r?\n([\s\S]*?)\r?\n---\r?\n?/.exec(text);
  if (!m) return { fields: {}, body: text };
  const fields: Record<string, string> = {};
  for (const line of (m[1] ?? "").split(/\r?\n/)) {
    const kv = /^([A-Za-z0-9_-]+)\s*:\s*(.*)$/.exec(line);
    if (!kv?.[1]) continue;
    fields[kv[1]] = (kv[2] ?? "").trim().replace(/^(["'])(.*)\1$/, "$2");
  }
  return { fields, body: text.slice(m[0].length) };
}

/** Loads one SKILL.md; a file without a description is not a skill. */
export function readSkill(file: string): Skill | undefined {
  try {
    if (statSync(file).size > MAX_SKILL_BYTES) return undefined;
    const { fields, body } = parseFrontMatter(readFileSync(file, "utf8"));
    const name = fields.name || path.basename(path.dirname(file));
    if (!fields.description) return undefined;
    return { name, description: fields.description, path: file, body };
  } catch {
    return undefined;
  }
}

/** Every `<dir>/<skill>/SKILL.md` (and a `<dir>/SKILL.md` itself), sorted by folder name. */
export function loadSkillsFrom(dir: string): Skill[] {
  if (!existsSync(dir)) return [];
  const skills: Skill[] = [];
  const own = readSkill(path.join(dir, "SKILL.md"));
  if (own) skills.push(own);
  let entries: string[] = [];
  try {
    entries = readdirSync(dir).sort();
  } catch {
    return skills;
  }
  for (const entry of entries) {
    const file = path.join(dir, entry, "SKILL.md");
    if (!existsSync(file)) continue;
    const skill = readSkill(file);
    if (skill) skills.push(skill);
  }
  return skills;
}

/** A project's skill folders: `.toolbelt/skills` and `.claude/skills`. */
export function projectSkills(root: string): Skill[] {
  return [
    ...loadSkillsFrom(path.join(root, ".toolbelt", "skills")),
    ...loadSkillsFrom(path.join(root, ".claude", "skills")),
  ];
}

/** The user's skills: `<toolbelt home>/skills`. */
export function userSkills(): Skill[] {
  return loadSkillsFrom(path.join(toolbeltHome(), "skills"));
}
