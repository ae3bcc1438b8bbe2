#!/usr/bin/env node
// The `toolbelt` command. It exists before the first build (npm links bins at install time, before
// the prepare step builds dist/), and hands over to the built CLI.
import "../dist/bin.js";
