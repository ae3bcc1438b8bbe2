// The raw baseline for `toolbelt exec`: the same JSONL in and out, each call done with plain Node
// (read_file: read the file and number its lines; list_files: a recursive readdir), no validation,
// no path checks, no events. What toolbelt adds per call is measured against this.
import { promises as fs } from "node:fs";
import path from "node:path";
import { createInterface } from "node:readline";

const root = process.argv[2] ?? process.cwd();
for await (const line of createInterface({ input: process.stdin, crlfDelay: Number.POSITIVE_INFINITY })) {
  if (line.trim() === "") continue;
  const { id, tool, input } = JSON.parse(line);
  let result;
  if (tool === "read_file") {
    const text = await fs.readFile(path.join(root, input.path), "utf8");
    const content = text
      .split("\n")
      .map((l, i) => `${String(i + 1).padStart(6)}\t${l}`)
      .join("\n");
    result = { kind: "file_content", path: input.path, content };
  } else {
    const entries = await fs.readdir(path.join(root, input.path ?? "."), { recursive: true });
    result = { kind: "file_list", entries: entries.sort() };
  }
  process.stdout.write(`${JSON.stringify({ id, tool, result })}\n`);
}
