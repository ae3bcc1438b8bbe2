// Step 6: use the plugin from the SDK. (From the CLI: "plugins": ["./word-count-plugin.mjs"] in configs/app.json.)
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { createSession } from "@toolbelt/core";
import wordsPlugin from "./word-count-plugin.mjs";

const root = mkdtempSync(path.join(os.tmpdir(), "plugin-authoring-"));
writeFileSync(path.join(root, "poem.txt"), "so much depends\nupon\na red wheel\nbarrow\n");

const session = await createSession({ root, plugins: [wordsPlugin] });
console.log(
  "bound:",
  session
    .bind()
    .tools.map((t) => t.name)
    .join(", "),
);
for (const input of [{ path: "poem.txt" }, { path: "../outside.txt" }, { path: 42 }]) {
  const { text } = await session.callWithText("word_count", input);
  console.log(`\n> word_count ${JSON.stringify(input)}\n${text}`);
}
await session.close();
rmSync(root, { recursive: true, force: true });
