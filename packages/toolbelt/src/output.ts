// The CLI writes through process.stdout: Node keeps the order of what is written, and holds the
// process open until a slow reader has taken all of it.

/** Writes one value as a JSON line on stdout. */
export function writeLine(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value)}\n`);
}

/**
 * A reader that stops early (`toolbelt tools --format names | head -3`) closes the pipe: that is not
 * an error, so the CLI stops quietly, with the exit code it had, instead of printing a stack trace.
 */
export function quietOnClosedPipe(): void {
  const onError = (error: NodeJS.ErrnoException): void => {
    if (error.code === "EPIPE") process.exit(process.exitCode ?? 0);
    throw error;
  };
  process.stdout.on("error", onError);
  process.stderr.on("error", onError);
}
