import { createRequire } from "node:module";
import type ignoreFactory from "ignore";
import type picomatchFn from "picomatch";

// picomatch and ignore are CommonJS, required when a glob or an ignore file first needs them: a
// call that matches no glob and reads no ignore file does not load them.
const require = createRequire(import.meta.url);

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
