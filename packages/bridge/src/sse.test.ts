import { describe, expect, it } from "vitest";
import { readSse, type SseMessage } from "./sse.js";

function streamOf(chunks: string[]): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  return new ReadableStream({
    start(controller) {
      for (const chunk of chunks) controller.enqueue(encoder.encode(chunk));
      controller.close();
    },
  });
}

async function collect(chunks: string[]): Promise<SseMessage[]> {
  const out: SseMessage[] = [];
  for await (const message of readSse(streamOf(chunks))) out.push(message);
  return out;
}

describe("readSse", () => {
  it("reads ids and data across chunk boundaries and skips comments", async () => {
    expect(
      await collect([
        ": keep-alive\n\nid: 1\nda",
        'ta: {"a":1}\n\n',
        "retry: 10\nid: 2\r\ndata: x\r\ndata: y\r\n\r\n",
      ]),
    ).toEqual([
      { id: "1", data: '{"a":1}' },
      { id: "2", data: "x\ny" },
    ]);
  });

  it("drops a message without data and an unterminated last message", async () => {
    expect(await collect(["id: 5\n\n", "event: e\ndata: ok\n\n", "data: partial"])).toEqual([
      { event: "e", data: "ok" },
    ]);
  });

  it("reads a CRLF split across two chunks as one line end", async () => {
    // Two messages; each CR ends one chunk and its LF starts the next. Read as two line ends, the
    // lone LF would be an empty line ending the message early (and the second would lose its id).
    expect(
      await collect(["id: 1\r", "\ndata: a\r", "\ndata: b\r", "\n\r", "\nid: 2\r", "\ndata: c\r\n\r\n"]),
    ).toEqual([
      { id: "1", data: "a\nb" },
      { id: "2", data: "c" },
    ]);
  });

  it("ends with an error, not unbounded memory, when a message never ends", async () => {
    const line = `data: ${"x".repeat(1024 * 1024)}`;
    const chunks = Array.from({ length: 40 }, () => line);
    await expect(collect(chunks)).rejects.toThrow(/SSE message larger than/);
  });
});
