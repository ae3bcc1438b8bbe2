import { existsSync, readdirSync } from "node:fs";
import path from "node:path";
import { normaliseError, type Skill } from "@toolbelt/core";
import {
  type BoundedFile,
  PathResolver,
  readFileInRoot,
  readRegularFile,
  toolbeltHome,
} from "@toolbelt/core/internal";
import type { SkippedFile } from "./instructions.js";

const MAX_SKILL_BYTES = 256 * 1024;

/**
 * Where skills are read from, and what to note: with `root` (a project's skills) every SKILL.md
 * must stay inside that root (a symlink leaving it is never followed); without it (the user's own
 * folder) symlinks are followed. Either way only regular files are read, without blocking, and at
 * most 256 KiB of each. Files that were there but not read are added to `skipped`, when given.
 */
export interface SkillReadOptions {
  root?: string;
  skipped?: SkippedFile[];
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
export function readSkill(file: string, options: SkillReadOptions = {}): Skill | undefined {
  const shown = options.root !== undefined ? path.relative(options.root, file) || file : file;
  let read: BoundedFile;
  try {
    read =
      options.root !== undefined
        ? readFileInRoot(options.root, file, { maxBytes: MAX_SKILL_BYTES })
        : readRegularFile(file, { maxBytes: MAX_SKILL_BYTES });
  } catch (error) {
    const refusal = normaliseError(error);
    if (refusal.code !== "ENOENT") options.skipped?.push({ file: shown, reason: refusal.message });
    return undefined;
  }
  if (read.truncated) {
    options.skipped?.push({
      file: shown,
      reason: `${shown} is larger than ${MAX_SKILL_BYTES} bytes (the limit for a SKILL.md)`,
    });
    return undefined;
  }
  const { fields, body } = parseFrontMatter(read.bytes.toString("utf8"));
  const name = fields.name || path.basename(path.dirname(file));
  if (!fields.description) return undefined;
  return { name, description: fields.description, path: file, body };
}

/** Every `<dir>/<skill>/SKILL.md` (and a `<dir>/SKILL.md` itself), sorted by folder name. */
export function loadSkillsFrom(dir: string, options: SkillReadOptions = {}): Skill[] {
  if (!existsSync(dir)) return [];
  if (options.root !== undefined) {
    // A skills folder that is itself a symlink out of the project is skipped once, not per entry.
    try {
      new PathResolver(options.root).resolve(dir);
    } catch (error) {
      options.skipped?.push({
        file: path.relative(options.root, dir) || dir,
        reason: normaliseError(error).message,
      });
      return [];
    }
  }
  const skills: Skill[] = [];
  const own = readSkill(path.join(dir, "SKILL.md"), options);
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
    const skill = readSkill(file, options);
    if (skill) skills.push(skill);
  }
  return skills;
}

/**
 * A project's skill folders: `.toolbelt/skills` and `.claude/skills`, read only inside `root` (see
 * SkillReadOptions); files refused are added to `skipped` when given.
 */
export function projectSkills(root: string, skipped?: SkippedFile[]): Skill[] {
  const options: SkillReadOptions = { root, ...(skipped ? { skipped } : {}) };
  return [
    ...loadSkillsFrom(path.join(root, ".toolbelt", "skills"), options),
    ...loadSkillsFrom(path.join(root, ".claude", "skills"), options),
  ];
}

/** The user's skills: `<toolbelt home>/skills`. */
export function userSkills(): Skill[] {
  return loadSkillsFrom(path.join(toolbeltHome(), "skills"));
}
