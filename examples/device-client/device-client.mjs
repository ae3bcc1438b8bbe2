#!/usr/bin/env node
// Offers this machine's device_* tools to a `toolbelt serve --http` session and serves their calls.
//   node device-client.mjs --url http://127.0.0.1:4317 --token <token> [--session ID]
//                          [--notify-file FILE] [--power-supply-dir DIR] [--recheck-ms N]
//                          [--capability NAME]...
import os from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import { connectClient } from "@toolbelt/bridge";
import { deviceTools } from "./device-tools.mjs";

const { values } = parseArgs({
  options: {
    url: { type: "string", default: "http://127.0.0.1:4317" },
    token: { type: "string", default: process.env.TOOLBELT_TOKEN },
    session: { type: "string" },
    "notify-file": { type: "string", default: path.join(os.homedir(), ".toolbelt-notifications.jsonl") },
    "power-supply-dir": { type: "string", default: "/sys/class/power_supply" },
    "recheck-ms": { type: "string", default: "30000" },
    // What the person at this device can do for the session, e.g. generative_ui (it can show panels).
    capability: { type: "string", multiple: true, default: [] },
  },
});
if (!values.token) {
  process.stderr.write(
    "device-client: give --token (or set TOOLBELT_TOKEN): the token `toolbelt serve --http` printed\n",
  );
  process.exit(2);
}

const toolOptions = { notifyFile: values["notify-file"], powerSupplyDir: values["power-supply-dir"] };
let tools = await deviceTools(toolOptions);
const names = (list) => list.map((t) => t.name).join(",");

const client = connectClient({
  url: values.url,
  token: values.token,
  ...(values.session ? { session: values.session } : {}),
  client: `device-client@${os.hostname()}`,
  tools,
  ...(values.capability.length ? { capabilities: values.capability } : {}),
  onStatus(status) {
    process.stderr.write(`device-client: ${JSON.stringify(status)}\n`);
  },
});
await client.ready.catch((error) => {
  process.stderr.write(`device-client: ${error.message}\n`);
  process.exit(1);
});
process.stdout.write(`device-client: offering ${names(tools)} to session ${client.session}\n`);

// A battery can come and go (a laptop dock): offer exactly what the machine has now.
const recheck = setInterval(async () => {
  const next = await deviceTools(toolOptions);
  if (names(next) === names(tools)) return;
  tools = next;
  await client.setTools(tools).catch(() => {});
  process.stdout.write(`device-client: now offering ${names(tools)}\n`);
}, Number(values["recheck-ms"]));

const stop = async () => {
  clearInterval(recheck);
  await client.close();
  process.exit(0);
};
process.once("SIGINT", stop);
process.once("SIGTERM", stop);
