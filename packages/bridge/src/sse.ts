import { createParser, type ParseError } from "eventsource-parser";

/** One Server-Sent Events message. */
export type SseMessage = { id?: string; event?: string; data: string };

/**
 * The longest message (or unterminated line) read, in characters: as much as the server keeps of a
 * session's event buffer. A stream that goes past it without ending a message ends with an error
 * (the client reconnects) instead of growing without bound.
 */
const SSE_MAX_MESSAGE_CHARS = 32 * 1024 * 1024;

/**
 * Reads an SSE body into messages, through eventsource-parser (line ends of every kind, also split
 * across chunks, as the spec reads them). Comments (`: keep-alive`) are skipped; a message without
 * data is dropped, as EventSource does, and so is an unterminated last one.
 */
export async function* readSse(body: ReadableStream<Uint8Array>): AsyncGenerator<SseMessage> {
  const decoder = new TextDecoder();
  const ready: SseMessage[] = [];
  let failure: ParseError | undefined;
  const parser = createParser({
    onEvent: ({ id, event, data }) =>
      ready.push({ data, ...(id !== undefined ? { id } : {}), ...(event !== undefined ? { event } : {}) }),
    // Unknown fields and a bad `retry` are ignored, as EventSource ignores them; only the bound ends.
    onError: (error) => {
      if (error.type === "max-buffer-size-exceeded") failure ??= error;
    },
    maxBufferSize: SSE_MAX_MESSAGE_CHARS,
  });
  const reader = body.getReader();
  try {
    while (true) {
      const { value, done } = await reader.read();
      if (done) break;
      parser.feed(decoder.decode(value, { stream: true }));
      if (failure) throw new Error(`SSE message larger than ${SSE_MAX_MESSAGE_CHARS} characters`);
      yield* ready.splice(0);
    }
  } finally {
    reader.releaseLock();
  }
}
