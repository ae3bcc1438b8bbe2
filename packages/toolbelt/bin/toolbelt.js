#!/usr/bin/env node
// The `toolbelt` command. npm links a package's bins before its `prepare` step builds dist/, so the
// linked file must exist before the first build: this one does, and runs the built CLI.
import "../dist/bin.js";
