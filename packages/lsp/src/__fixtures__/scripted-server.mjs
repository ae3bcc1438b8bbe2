// A minimal stdio language server whose answers come from its environment, for tests of what
// toolbelt does with them: SCRIPTED_RENAME_EDIT (JSON) is the workspace edit every rename returns;
// SCRIPTED_ENV_DUMP names a file the server writes its environment to (JSON) at start;
// SCRIPTED_TRY_WRITE names a file the server tries to create at start, recording the outcome in
// SCRIPTED_ENV_DUMP's neighbour `<dump>.write` ("ok" or the error code).
// SCRIPTED_LOCATIONS (JSON, an array of LSP Locations) is the answer to every definition, references
// and implementation request, and (as symbols named "scripted") to workspace/symbol.
import { writeFileSync } from "node:fs";

let buffer = Buffer.alloc(0);
const locations = process.env.SCRIPTED_LOCATIONS ? JSON.parse(process.env.SCRIPTED_LOCATIONS) : undefined;

if (process.env.SCRIPTED_ENV_DUMP) writeFileSync(process.env.SCRIPTED_ENV_DUMP, JSON.stringify(process.env));
if (process.env.SCRIPTED_TRY_WRITE) {
  let outcome = "ok";
  try {
    writeFileSync(process.env.SCRIPTED_TRY_WRITE, "written by the language server\n");
  } catch (error) {
    outcome = error.code ?? String(error);
  }
  if (process.env.SCRIPTED_ENV_DUMP) writeFileSync(`${process.env.SCRIPTED_ENV_DUMP}.write`, outcome);
}

function send(message) {
  const body = Buffer.from(JSON.stringify({ jsonrpc: "2.0", ...message }), "utf8");
  process.stdout.write(`Content-Length: ${body.length}\r\n\r\n`);
  process.stdout.write(body);
}

function handle(message) {
  const { id, method } = message;
  if (method === "initialize")
    send({
      id,
      result: {
        capabilities: {
          textDocumentSync: 1,
          renameProvider: true,
          documentSymbolProvider: true,
          ...(locations
            ? { definitionProvider: true, referencesProvider: true, workspaceSymbolProvider: true }
            : {}),
        },
        serverInfo: { name: "scripted", version: "1" },
      },
    });
  else if (method === "shutdown") send({ id, result: null });
  else if (method === "exit") process.exit(0);
  else if (method === "textDocument/rename")
    send({ id, result: JSON.parse(process.env.SCRIPTED_RENAME_EDIT ?? "null") });
  else if (
    locations &&
    (method === "textDocument/definition" ||
      method === "textDocument/references" ||
      method === "textDocument/implementation")
  )
    send({ id, result: locations });
  else if (locations && method === "workspace/symbol")
    send({ id, result: locations.map((location) => ({ name: "scripted", kind: 13, location })) });
  else if (method === "textDocument/documentSymbol")
    send({
      id,
      result: [
        {
          name: "scripted",
          kind: 12,
          range: { start: { line: 0, character: 0 }, end: { line: 0, character: 1 } },
          selectionRange: { start: { line: 0, character: 0 }, end: { line: 0, character: 1 } },
        },
      ],
    });
  else if (id !== undefined && method) send({ id, error: { code: -32601, message: `unhandled ${method}` } });
}

process.stdin.on("data", (chunk) => {
  buffer = Buffer.concat([buffer, chunk]);
  for (;;) {
    const headerEnd = buffer.indexOf("\r\n\r\n");
    if (headerEnd < 0) return;
    const length = Number(/Content-Length: (\d+)/i.exec(buffer.subarray(0, headerEnd).toString())?.[1]);
    if (buffer.length < headerEnd + 4 + length) return;
    const body = buffer.subarray(headerEnd + 4, headerEnd + 4 + length).toString("utf8");
    buffer = buffer.subarray(headerEnd + 4 + length);
    handle(JSON.parse(body));
  }
});
