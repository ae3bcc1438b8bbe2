import { type CommandWrapper, type DoctorCheck, definePlugin, type Plugin } from "@toolbelt/core";
import { contributions } from "./contrib.js";
import { listDirTool, listFilesTool } from "./list-files.js";
import { readFileTool } from "./read-file.js";
import { chooseEngine } from "./search/engine.js";
import { ignoreFilesAbove } from "./search/ripgrep.js";
import { searchFilesTool } from "./search-files.js";
import { writeFileTool } from "./write-file.js";

export type { DirListPayload, FileListPayload } from "./list-files.js";
export type { FileContentPayload, FileUnchangedPayload, ImagePayload } from "./read-file.js";
export type { FilesResults } from "./results.js";
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
  async doctor({ config, root, wrapCommand }): Promise<DoctorCheck[]> {
    const choice = await chooseEngine(config);
    if (choice.engine === "ripgrep") {
      return [
        { name: "search", status: "ok", detail: `ripgrep: ${choice.rg.path} (${choice.reason})` },
        searchSandboxCheck(choice.rg.path, root, wrapCommand),
      ];
    }
    if (choice.engine === "js")
      return [
        { name: "search", status: "ok", detail: `js walker (${choice.reason})` },
        {
          name: "search-sandbox",
          status: "skipped",
          detail: "searches run in toolbelt's own process (JS engine): no ripgrep process to confine",
        },
      ];
    return [{ name: "search", status: "unavailable", detail: choice.reason }];
  },
});

export { contributions, filesConfig, filesEvents } from "./contrib.js";

/**
 * Whether ripgrep runs confined (the session's wrapper: the shell family's Landlock), asked the way a
 * search asks; if not, why, and what guards the answers instead.
 */
function searchSandboxCheck(rg: string, root: string, wrapCommand: CommandWrapper | undefined): DoctorCheck {
  const fallback =
    "every line an answer shows is read again through the checked open and dropped if it changed (match totals of files not shown are not checked)";
  if (!wrapCommand)
    return {
      name: "search-sandbox",
      status: "unavailable",
      detail: `ripgrep runs unconfined: no sandbox wrapper (the shell family is not loaded); ${fallback}`,
    };
  let spec: ReturnType<CommandWrapper>;
  try {
    spec = wrapCommand({ file: rg, args: [], cwd: root, env: {}, reads: ignoreFilesAbove(root) }, "search");
  } catch (error) {
    return {
      name: "search-sandbox",
      status: "unavailable",
      detail: `ripgrep runs unconfined: ${(error as Error).message}; ${fallback}`,
    };
  }
  if (spec.confined === true)
    return {
      name: "search-sandbox",
      status: "ok",
      detail:
        "ripgrep runs under Landlock: it reads only beneath the root (and the ignore files above it) and writes nothing",
    };
  return {
    name: "search-sandbox",
    status: "unavailable",
    detail: `ripgrep runs unconfined: ${spec.unconfinedReason ?? "no wrapper confines it"}; ${fallback}`,
  };
}
