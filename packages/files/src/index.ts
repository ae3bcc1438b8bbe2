import { type DoctorCheck, definePlugin, type Plugin } from "@toolbelt/core";
import { contributions } from "./contrib.js";
import { listDirTool, listFilesTool } from "./list-files.js";
import { readFileTool } from "./read-file.js";
import { chooseEngine } from "./search/engine.js";
import { searchFilesTool } from "./search-files.js";
import { writeFileTool } from "./write-file.js";

export type { DirListPayload, FileListPayload } from "./list-files.js";
export type { FileContentPayload, FileUnchangedPayload, ImagePayload } from "./read-file.js";
export { chooseEngine, type EngineChoice, locateRipgrep } from "./search/engine.js";
export { ripgrepArgs } from "./search/ripgrep.js";
export type { SearchResultsPayload } from "./search-files.js";
export { clearIgnoreCache } from "./walk.js";
export type { FileWrittenPayload } from "./write-file.js";
export { listDirTool, listFilesTool, readFileTool, searchFilesTool, writeFileTool };

/** The files family as a plugin: its tools, registered by createToolbelt(). */
export const family: Plugin = definePlugin({
  name: "files",
  contributes: contributions,
  tools: [readFileTool, writeFileTool, listFilesTool, listDirTool, searchFilesTool],
  async doctor({ config }): Promise<DoctorCheck[]> {
    const choice = await chooseEngine(config);
    if (choice.engine === "ripgrep") {
      return [{ name: "search", status: "ok", detail: `ripgrep: ${choice.rg.path} (${choice.reason})` }];
    }
    if (choice.engine === "js")
      return [{ name: "search", status: "ok", detail: `js walker (${choice.reason})` }];
    return [{ name: "search", status: "unavailable", detail: choice.reason }];
  },
});

export { contributions, filesConfig } from "./contrib.js";
