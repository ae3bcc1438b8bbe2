#!/usr/bin/env node
import module from "node:module";
import { quietOnClosedPipe } from "./output.js";

quietOnClosedPipe();
// Node ≥ 22.1 keeps compiled code on disk between runs (NODE_DISABLE_COMPILE_CACHE=1 turns it off);
// Node 20, our floor, has no such API. Switched on before the CLI's modules load, so they are cached too.
(module as { enableCompileCache?: () => unknown }).enableCompileCache?.();
const { main } = await import("./cli.js");
process.exitCode = await main(process.argv.slice(2));
