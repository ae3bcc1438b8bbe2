/** One Server-Sent Events message. */
export type SseMessage = { id?: string; event?: string; data: string };

/**
 * Reads an SSE body into messages. Comments (`: keep-alive`) are skipped; a message without data
 * is dropped, as EventSource does.
 */
export async function* readSse(body: ReadableStream<Uint8Array>): AsyncGenerator<SseMessage> {
  const decoder = new TextDecoder();
  let buffer = "";
  let message: { id?: string; event?: string; data: string[] } = { data: [] };
  const reader = body.getReader();
  try {
    while (true) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true });
      let newline = buffer.search(/\r\n|\r|\n/);
      while (newline !== -1) {
        const line = buffer.slice(0, newline);
        buffer = buffer.slice(newline + (buffer.startsWith("\r\n", newline) ? 2 : 1));
        if (line === "") {
          if (message.data.length) {
            yield {
              data: message.data.join("\n"),
              ...(message.id !== undefined ? { id: message.id } : {}),
              ...(message.event !== undefined ? { event: message.event } : {}),
            };
          }
          message = { data: [] };
        } else if (!line.startsWith(":")) {
          const colon = line.indexOf(":");
          const field = colon === -1 ? line : line.slice(0, colon);
          let value = colon === -1 ? "" : line.slice(colon + 1);
          if (value.startsWith(" ")) value = value.slice(1);
          if (field === "data") message.data.push(value);
          else if (field === "id") message.id = value;
          else if (field === "event") message.event = value;
        }
        newline = buffer.search(/\r\n|\r|\n/);
      }
    }
  } finally {
    reader.releaseLock();
  }
}
