// A minimal stdio language server for tests of the push path: it publishes diagnostics in stages
// (a stale publish for the previous version, a partial one, then the final one), or never
// (PUSH_FIXTURE_MODE=silent), or exits on the first document (PUSH_FIXTURE_MODE=crash). Every line
// containing ERROR gets one error and every line containing WARN one warning; the messages name the
// line unless PUSH_FIXTURE_PLAIN=1 (then a problem that moves keeps its message).
let buffer = Buffer.alloc(0);
const mode = process.env.PUSH_FIXTURE_MODE ?? "staged";
const plain = process.env.PUSH_FIXTURE_PLAIN === "1";

function send(message) {
  const body = Buffer.from(JSON.stringify({ jsonrpc: "2.0", ...message }), "utf8");
  process.stdout.write(`Content-Length: ${body.length}\r\n\r\n`);
  process.stdout.write(body);
}

function publish(uri, version, diagnostics) {
  send({ method: "textDocument/publishDiagnostics", params: { uri, version, diagnostics } });
}

function errorsOf(text) {
  const out = [];
  text.split("\n").forEach((line, index) => {
    for (const [word, severity, code] of [
      ["ERROR", 1, "E1"],
      ["WARN", 2, "W1"],
    ]) {
      const at = line.indexOf(word);
      if (at >= 0)
        out.push({
          range: { start: { line: index, character: at }, end: { line: index, character: at + word.length } },
          severity,
          code,
          source: "push-fixture",
          message: plain ? `found ${word}` : `found ${word} on line ${index + 1}`,
        });
    }
  });
  return out;
}

function onDocument(uri, version, text) {
  if (mode === "silent") return;
  if (mode === "crash") process.exit(3);
  if (version > 1)
    publish(uri, version - 1, [
      { range: { start: { line: 0, character: 0 }, end: { line: 0, character: 1 } }, severity: 1, message: "stale" },
    ]);
  setTimeout(() => publish(uri, version, []), 30);
  setTimeout(() => publish(uri, version, errorsOf(text)), 150);
}

function handle(message) {
  const { id, method, params } = message;
  if (method === "initialize")
    send({ id, result: { capabilities: { textDocumentSync: 1 }, serverInfo: { name: "push-fixture", version: "1" } } });
  else if (method === "shutdown") send({ id, result: null });
  else if (method === "exit") process.exit(0);
  else if (method === "textDocument/didOpen")
    onDocument(params.textDocument.uri, params.textDocument.version, params.textDocument.text);
  else if (method === "textDocument/didChange")
    onDocument(params.textDocument.uri, params.textDocument.version, params.contentChanges.at(-1).text);
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
