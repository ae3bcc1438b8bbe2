// The messages one MCP-over-HTTP session sent on its SSE streams, kept so a client that lost a
// stream can resume it (`Last-Event-ID`). Bounded by count and bytes: the oldest go first, the newest
// always stays (a resume right after a large result still gets it).
import type { EventId, EventStore, StreamId } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";

export const DEFAULT_STORE_EVENTS = 1000;
export const DEFAULT_STORE_BYTES = 8 * 1024 * 1024;

type Stored = { id: EventId; stream: StreamId; message: JSONRPCMessage; bytes: number };

export class BoundedEventStore implements EventStore {
  readonly #events: Stored[] = [];
  readonly #index = new Map<EventId, Stored>();
  #bytes = 0;
  #next = 0;

  constructor(
    readonly maxEvents = DEFAULT_STORE_EVENTS,
    readonly maxBytes = DEFAULT_STORE_BYTES,
  ) {}

  async storeEvent(stream: StreamId, message: JSONRPCMessage): Promise<EventId> {
    const id = String(++this.#next);
    const stored = { id, stream, message, bytes: JSON.stringify(message).length };
    this.#events.push(stored);
    this.#index.set(id, stored);
    this.#bytes += stored.bytes;
    while (this.#events.length > 1 && (this.#events.length > this.maxEvents || this.#bytes > this.maxBytes)) {
      const gone = this.#events.shift() as Stored;
      this.#index.delete(gone.id);
      this.#bytes -= gone.bytes;
    }
    return id;
  }

  /** The stream of an event still held; undefined for one never given or already dropped. */
  async getStreamIdForEventId(id: EventId): Promise<StreamId | undefined> {
    return this.#index.get(id)?.stream;
  }

  async replayEventsAfter(
    lastEventId: EventId,
    { send }: { send: (id: EventId, message: JSONRPCMessage) => Promise<void> },
  ): Promise<StreamId> {
    const last = this.#index.get(lastEventId);
    if (!last) throw new Error(`event ${lastEventId} is not held any more (or never was)`);
    for (const event of this.#events) {
      if (Number(event.id) <= Number(last.id) || event.stream !== last.stream) continue;
      // A priming event (no message, only an id to resume from) is not replayed.
      if (!("jsonrpc" in event.message)) continue;
      await send(event.id, event.message);
    }
    return last.stream;
  }
}
