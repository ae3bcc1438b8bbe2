import { execFile } from "node:child_process";
import { ToolbeltError } from "@toolbelt/core";

export interface GitOutput {
  stdout: string;
  /** Bytes git wrote that were not kept. */
  droppedBytes: number;
}

/**
 * Runs git with an argument vector (never a shell), no pager, no prompts and no config-driven
 * colour, keeping at most `maxBytes` of stdout.
 */
export function git(
  args: string[],
  cwd: string,
  options: { maxBytes: number; signal?: AbortSignal },
): Promise<GitOutput> {
  return new Promise((resolve, reject) => {
    const child = execFile(
      "git",
      ["--no-pager", "-c", "color.ui=never", "-c", "core.quotepath=off", ...args],
      {
        cwd,
        env: {
          ...process.env,
          GIT_PAGER: "cat",
          PAGER: "cat",
          GIT_TERMINAL_PROMPT: "0",
          GIT_OPTIONAL_LOCKS: "0",
          LC_ALL: "C",
        },
        // Keep reading past the cap so git never blocks on a full pipe; we count what we drop.
        maxBuffer: Number.POSITIVE_INFINITY,
        encoding: "buffer",
        ...(options.signal ? { signal: options.signal } : {}),
      },
      (error, stdout, stderr) => {
        if (error && (error as NodeJS.ErrnoException).code === "ENOENT") {
          reject(new ToolbeltError("EUNAVAILABLE", "git is not installed or not on PATH"));
          return;
        }
        if (error) {
          const message = stderr.toString("utf8").trim() || error.message;
          if (/not a git repository/i.test(message)) {
            reject(new ToolbeltError("EUNAVAILABLE", `not a git repository: ${cwd}`));
            return;
          }
          reject(
            new ToolbeltError(
              "EINVAL_INPUT",
              `git ${args[0]} failed: ${message.split("\n").slice(0, 5).join("\n")}`,
            ),
          );
          return;
        }
        const kept = stdout.subarray(0, options.maxBytes);
        resolve({ stdout: kept.toString("utf8"), droppedBytes: stdout.length - kept.length });
      },
    );
    child.stdin?.end();
  });
}
