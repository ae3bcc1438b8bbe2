// tar-fs ships no types; this is the part the copy mode uses.
declare module "tar-fs" {
  import type { Readable } from "node:stream";
  export interface Header {
    name: string;
    [key: string]: unknown;
  }
  export function pack(dir: string, options?: { map?: (header: Header) => Header }): Readable;
}
