import { fstatSync, writeSync } from "node:fs";
import { createRequire } from "node:module";

// The CLI's standard output. Node makes process.stdout on first use: on a pipe (CI captures output
// so) that is a net.Socket, and making it, and closing it at exit, was about 4 ms of a one-shot run
// (benchmarks/startup). So the CLI writes through the descriptor, synchronously, as process.stdout
// itself does on Linux pipes and files. A non-blocking pipe that is full (EAGAIN: a slow reader)
// hands the rest, and every later write, to process.stdout, which waits for the reader: the order
// of the output is kept either way.

let streaming = false;

/** Writes `text` to stdout; a reader that closed the pipe ends the run quietly (see {@link quietEpipe}). */
export function writeOut(text: string): void {
  if (!streaming) {
    const bytes = Buffer.from(text, "utf8");
    let at = 0;
    try {
      while (at < bytes.length) at += writeSync(1, bytes, at);
      return;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "EPIPE") process.exit(process.exitCode ?? 0);
      streaming = true;
      process.stdout.write(bytes.subarray(at));
      return;
    }
  }
  process.stdout.write(text);
}

/**
 * A reader that stops early (`toolbelt tools --format names | head -3`) closes the pipe: that is
 * not an error, so the CLI stops quietly instead of printing a stack trace. The handler goes on
 * process.stdout and process.stderr when each is made, if ever: asking for them here would make
 * them (see above).
 */
export function quietEpipe(): void {
  const onError = (error: NodeJS.ErrnoException): void => {
    if (error.code === "EPIPE") process.exit(process.exitCode ?? 0);
    throw error;
  };
  for (const name of ["stdout", "stderr"] as const) {
    const made = Object.getOwnPropertyDescriptor(process, name);
    if (!made?.get || !made.configurable) {
      process[name].on("error", onError); // not Node's lazy getter: the stream exists already
      continue;
    }
    const get = made.get;
    Object.defineProperty(process, name, {
      configurable: true,
      enumerable: made.enumerable,
      get() {
        const stream = get.call(process) as NodeJS.WriteStream;
        Object.defineProperty(process, name, {
          configurable: true,
          enumerable: made.enumerable,
          get: () => stream,
        });
        stream.on("error", onError);
        return stream;
      },
    });
  }
}

/** node:tty, loaded by the first question a stat does not answer. */
function tty(): typeof import("node:tty") {
  return createRequire(import.meta.url)("node:tty") as typeof import("node:tty");
}

/**
 * Whether `fd` is a terminal, as node:tty's isatty says, without loading node:tty (it loads node:net
 * and the streams, about a millisecond) for the answers a stat gives: anything but a character device
 * is no terminal, and on Linux neither is a memory device (major 1: /dev/null, which CI runners
 * give as stdin).
 */
export function isTerminal(fd: number): boolean {
  try {
    const stat = fstatSync(fd);
    if (!stat.isCharacterDevice()) return false;
    // Linux's dev_t: the major number's low 12 bits are bits 8-19, its high bits start at bit 32.
    const major = stat.rdev < 2 ** 32 ? Math.floor(stat.rdev / 256) % 4096 : -1;
    if (process.platform === "linux" && major === 1) return false;
  } catch {
    return false;
  }
  return tty().isatty(fd);
}
