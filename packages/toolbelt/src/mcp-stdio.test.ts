import { PassThrough } from "node:stream";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import { describe, expect, it } from "vitest";
import { LineTransport, topLevelId } from "./mcp-stdio.js";

function harness(maxMessageBytes: number) {
  const input = new PassThrough();
  const output = new PassThrough();
  const logs: string[] = [];
  const received: JSONRPCMessage[] = [];
  const sent: Array<Record<string, unknown>> = [];
  let pending = "";
  output.on("data", (d: Buffer) => {
    pending += d.toString();
    const lines = pending.split("\n");
    pending = lines.pop() ?? "";
    for (const line of lines) sent.push(JSON.parse(line) as Record<string, unknown>);
  });
  const transport = new LineTransport(input, output, { maxMessageBytes, log: (l) => logs.push(l) });
  transport.onmessage = (m) => received.push(m);
  return { input, transport, logs, received, sent };
}

const tick = () => new Promise((r) => setImmediate(r));

describe("LineTransport", () => {
  it("skips a line over the bound, answers it with -32600 and its id, and reads the next line", async () => {
    const h = harness(1024);
    await h.transport.start();
    // Written in pieces, as a pipe delivers it, so the bound is crossed mid-line.
    h.input.write(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"id":99,"x":"`);
    for (let i = 0; i < 20; i++) h.input.write("y".repeat(500));
    h.input.write(`"}}\n{"jsonrpc":"2.0","id":8,"method":"tools/list"}\n`);
    await tick();
    expect(h.sent).toHaveLength(1);
    expect(h.sent[0]).toMatchObject({ id: 7, error: { code: -32600 } });
    expect(JSON.stringify(h.sent[0])).toContain("over the 1024 byte limit");
    expect(h.received).toEqual([{ jsonrpc: "2.0", id: 8, method: "tools/list" }]);
    expect(h.logs.join("\n")).toContain("skipped");
  });

  it("answers a line that is not JSON with -32700 and id null", async () => {
    const h = harness(1024);
    await h.transport.start();
    h.input.write('{"jsonrpc": "2.0", "id": 1, "method": \n');
    h.input.write('{"jsonrpc":"2.0","id":"a","method":"ping"}\n');
    await tick();
    expect(h.sent).toEqual([
      { jsonrpc: "2.0", id: null, error: { code: -32700, message: expect.any(String) } },
    ]);
    expect(h.received).toHaveLength(1);
  });

  it("answers JSON that is not JSON-RPC with -32600, keeping the id it can read", async () => {
    const h = harness(1024);
    await h.transport.start();
    h.input.write('{"id":3,"method":5}\n[1,2]\n\n"text"\n');
    await tick();
    expect(h.sent.map((m) => [m.id, (m.error as { code: number }).code])).toEqual([
      [3, -32600],
      [null, -32600],
      [null, -32600],
    ]);
    expect(h.received).toEqual([]);
  });

  it("refuses a message nested deeper than the bound before parsing it", async () => {
    const h = harness(1024 * 1024);
    await h.transport.start();
    h.input.write(
      `{"jsonrpc":"2.0","id":4,"method":"x","params":{"a":${"[".repeat(200)}${"]".repeat(200)}}}\n`,
    );
    await tick();
    expect(h.sent).toEqual([
      { jsonrpc: "2.0", id: 4, error: { code: -32600, message: expect.stringContaining("deeper than 128") } },
    ]);
    expect(h.received).toEqual([]);
  });

  it("closes when its input ends", async () => {
    const h = harness(1024);
    let closed = false;
    h.transport.onclose = () => {
      closed = true;
    };
    await h.transport.start();
    h.input.end();
    h.input.resume();
    await tick();
    expect(closed).toBe(true);
  });
});

describe("topLevelId", () => {
  it("reads the top-level id and never one nested in params", () => {
    expect(topLevelId('{"jsonrpc":"2.0","id":12,"method":"x"')).toBe(12);
    expect(topLevelId('{"jsonrpc":"2.0","id":"a\\"b","method"')).toBe('a"b');
    expect(topLevelId('{"params":{"id":5,"a":[{"id":6}]},"id":"real","m')).toBe("real");
    expect(topLevelId('{"method":"x","params":{"id":5,"text":"aaaa')).toBeNull();
    expect(topLevelId('{"id":12')).toBeNull();
    expect(topLevelId('{"id":{"x":1},"m"')).toBeNull();
    expect(topLevelId("garbage")).toBeNull();
  });
});
