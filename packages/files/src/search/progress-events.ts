import type { SearchProgress } from "./results.js";

/** The shortest time between two progress reports of one search: a few a second at most. */
export const PROGRESS_INTERVAL_MS = 250;

/**
 * Turns an engine's stream of running totals into a few reports a second: the first at once (a
 * search shorter than the interval still says what it found before its answer), then at most one
 * per interval, carrying the latest totals. `stop` drops a pending report: the answer says the rest.
 */
export class ProgressThrottle {
  readonly #send: (found: SearchProgress) => void;
  #latest: SearchProgress | undefined;
  #sentAt = Number.NEGATIVE_INFINITY;
  #timer: NodeJS.Timeout | undefined;
  #stopped = false;

  constructor(send: (found: SearchProgress) => void) {
    this.#send = send;
  }

  update(found: SearchProgress): void {
    if (this.#stopped) return;
    this.#latest = found;
    if (this.#timer) return;
    const wait = this.#sentAt + PROGRESS_INTERVAL_MS - performance.now();
    if (wait <= 0) this.#flush();
    else this.#timer = setTimeout(() => this.#flush(), wait);
  }

  stop(): void {
    this.#stopped = true;
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  #flush(): void {
    this.#timer = undefined;
    const latest = this.#latest;
    if (latest === undefined || this.#stopped) return;
    this.#latest = undefined;
    this.#sentAt = performance.now();
    this.#send(latest);
  }
}
