import { fileURLToPath, pathToFileURL } from "node:url";

export function toUri(abs: string): string {
  return pathToFileURL(abs).href;
}

/** The absolute path of a `file:` URI; undefined for other schemes. */
export function fromUri(uri: string): string | undefined {
  if (!uri.startsWith("file:")) return undefined;
  try {
    return fileURLToPath(uri);
  } catch {
    return undefined;
  }
}
