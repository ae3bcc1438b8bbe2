import { requireLater } from "@toolbelt/core/internal";
import type ignoreFactory from "ignore";
import type picomatchFn from "picomatch";

// picomatch and ignore are CommonJS: imported from ESM, Node scans each file's source for its
// export names before running it (≈ 10 ms of a one-shot `run read_file`, which matches no glob
// and reads no ignore file). Required on first use instead, they cost only the calls that need them.
const require = requireLater(() => import.meta.url);

let picomatch: typeof picomatchFn | undefined;
let ignore: typeof ignoreFactory | undefined;

/** picomatch, loaded on first use. */
export function loadPicomatch(): typeof picomatchFn {
  picomatch ??= require("picomatch") as typeof picomatchFn;
  return picomatch;
}

/** ignore's factory, loaded on first use. */
export function loadIgnore(): typeof ignoreFactory {
  ignore ??= require("ignore") as typeof ignoreFactory;
  return ignore;
}
