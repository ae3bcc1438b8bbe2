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
});
