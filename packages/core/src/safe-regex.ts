import { MessageChannel, type MessagePort, receiveMessageOnPort, Worker } from "node:worker_threads";
import { ToolbeltError } from "./errors.js";

/**
 * Regexes from callers run on irregexp (V8's backtracking engine), where a pattern such as `(a+)+$`
 * takes exponential time and cannot be interrupted on the thread that runs it. So the matching runs
 * in a worker thread instead, under a time budget: when the budget runs out the worker is terminated
 * (V8 stops it even inside a regex) and the caller gets ETIMEOUT naming the budget. A linear-time
 * engine was weighed and rejected: Node 20's V8 linear engine refuses the `i` and `u` flags, which
 * ripgrep parity needs (Unicode `\w`), and RE2 ports change the syntax or cost several times the speed.
 */

/** Budget for one line filter (shell_session filter, allowlists): far above any sane pattern. */
export const REGEX_BUDGET_MS = 1000;

/** How long a worker may take to start before the call fails (a loaded machine can be slow). */
const STARTUP_MS = 15_000;

/**
 * The worker's side: `program` is the source of a self-contained expression evaluating to a function
 * `(request) => response` (it may close over nothing outside itself).
 */
const BOOT = `
const { workerData } = require("node:worker_threads");
const { port, flag } = workerData;
const ticks = new Int32Array(flag);
const handle = (0, eval)(workerData.program);
const reply = (message) => {
  port.postMessage(message);
  Atomics.add(ticks, 0, 1);
  Atomics.notify(ticks, 0);
};
port.on("message", (m) => {
  let message;
  try {
    message = { id: m.id, ok: true, value: handle(m.request) };
  } catch (error) {
    message = { id: m.id, ok: false, message: String((error && error.message) || error) };
  }
  reply(message);
});
reply({ id: 0, ok: true, value: "ready" });
`;

type Reply = { id: number; ok: true; value: unknown } | { id: number; ok: false; message: string };

type Pending = {
  id: number;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
  budgetMs: number;
  timeoutMessage: string;
};

export type BudgetedCallOptions = {
  /** Wall-clock budget of this request, counted from when the worker starts on it. */
  budgetMs: number;
  /** The ETIMEOUT message when the budget runs out (it should name the budget). */
  timeoutMessage: string;
  signal?: AbortSignal;
  /** ArrayBuffers to move into the worker instead of copying them. */
  transfer?: ArrayBuffer[];
};

/**
 * One worker thread running one program, restarted after it is terminated. A worker serves either
 * synchronous or asynchronous calls, never both: both read the same reply port.
 */
export class BudgetedWorker {
  private worker: Worker | undefined;
  private port: MessagePort | undefined;
  private ticks: Int32Array | undefined;
  /** The worker has started: budgets count from then, not from its (slow, on a busy machine) start. */
  private started = false;
  private readySync = false;
  private nextId = 1;
  private readonly queue: Pending[] = [];
  private timer: ReturnType<typeof setTimeout> | undefined;

  constructor(private readonly program: string) {}

  private start(async: boolean): void {
    if (this.worker) return;
    const { port1, port2 } = new MessageChannel();
    const flag = new SharedArrayBuffer(4);
    this.ticks = new Int32Array(flag);
    this.worker = new Worker(BOOT, {
      eval: true,
      workerData: { port: port2, flag, program: this.program },
      transferList: [port2],
      // The matching needs little; a runaway pattern must not take the process's memory with it.
      resourceLimits: { maxOldGenerationSizeMb: 512 },
    });
    this.worker.unref();
    this.port = port1;
    this.readySync = false;
    const worker = this.worker;
    worker.on("error", (error) => this.fail(worker, error));
    worker.on("exit", () => this.fail(worker, new Error("the regex worker exited")));
    this.started = false;
    if (async) {
      port1.on("message", (reply: Reply) => {
        if (reply.id === 0) {
          this.started = true;
          this.armHead();
          return;
        }
        this.settle(reply);
      });
      port1.unref();
    }
  }

  private fail(worker: Worker, error: unknown): void {
    if (this.worker !== worker) return;
    this.stop();
    for (const p of this.queue.splice(0)) p.reject(error);
  }

  private stop(): void {
    const worker = this.worker;
    this.worker = undefined;
    this.port?.close();
    this.port = undefined;
    this.started = false;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    void worker?.terminate();
  }

  /** Arms the budget timer for the request the worker is busy with (the head of the queue). */
  private armHead(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    const head = this.queue[0];
    if (!head || !this.started) return;
    this.timer = setTimeout(() => {
      this.stop();
      const [first, ...rest] = this.queue.splice(0);
      first?.reject(
        new ToolbeltError("ETIMEOUT", first.timeoutMessage, { details: { budget_ms: first.budgetMs } }),
      );
      // Requests queued behind a runaway one did not get their turn; the caller decides about them.
      for (const p of rest) p.reject(new ToolbeltError("ECANCELLED", "the regex worker was restarted"));
    }, head.budgetMs);
  }

  private settle(reply: Reply): void {
    const index = this.queue.findIndex((p) => p.id === reply.id);
    if (index === -1) return;
    const [p] = this.queue.splice(index, 1) as [Pending];
    if (this.queue.length === 0) this.worker?.unref();
    if (reply.ok) p.resolve(reply.value);
    else p.reject(new ToolbeltError("EINVAL_INPUT", reply.message));
    this.armHead();
  }

  /** Runs one request asynchronously; the event loop stays free meanwhile. */
  run<Res>(request: unknown, options: BudgetedCallOptions): Promise<Res> {
    if (options.signal?.aborted)
      return Promise.reject(new ToolbeltError("ECANCELLED", "the call was cancelled"));
    this.start(true);
    const worker = this.worker as Worker;
    worker.ref();
    const id = this.nextId++;
    return new Promise<Res>((resolve, reject) => {
      const onAbort = () => {
        if (this.worker === worker) this.stop();
        for (const p of this.queue.splice(0))
          p.reject(new ToolbeltError("ECANCELLED", "the call was cancelled"));
      };
      options.signal?.addEventListener("abort", onAbort, { once: true });
      const done = () => options.signal?.removeEventListener("abort", onAbort);
      this.queue.push({
        id,
        resolve: (v) => {
          done();
          resolve(v as Res);
        },
        reject: (e) => {
          done();
          reject(e);
        },
        budgetMs: options.budgetMs,
        timeoutMessage: options.timeoutMessage,
      });
      (this.port as MessagePort).postMessage({ id, request }, options.transfer ?? []);
      if (this.queue.length === 1) this.armHead();
    });
  }

  private waitTick(seen: number, ms: number): boolean {
    return Atomics.wait(this.ticks as Int32Array, 0, seen, ms) !== "timed-out";
  }

  /**
   * Runs one request synchronously: the calling thread blocks for at most `budgetMs` (plus the
   * worker's start the first time), for callers that must answer synchronously.
   */
  runSync<Res>(request: unknown, options: Omit<BudgetedCallOptions, "signal">): Res {
    this.start(false);
    const ticks = this.ticks as Int32Array;
    const port = this.port as MessagePort;
    if (!this.readySync) {
      const deadline = Date.now() + STARTUP_MS;
      while (true) {
        const seen = Atomics.load(ticks, 0);
        if (receiveMessageOnPort(port)) break;
        const left = deadline - Date.now();
        if (left <= 0 || !this.waitTick(seen, left)) {
          this.stop();
          throw new ToolbeltError("EUNAVAILABLE", "the regex worker did not start");
        }
      }
      this.readySync = true;
    }
    const id = this.nextId++;
    port.postMessage({ id, request }, options.transfer ?? []);
    const deadline = Date.now() + options.budgetMs;
    while (true) {
      const seen = Atomics.load(ticks, 0);
      const got = receiveMessageOnPort(port);
      if (got) {
        const reply = got.message as Reply;
        if (reply.id !== id) continue;
        if (reply.ok) return reply.value as Res;
        throw new ToolbeltError("EINVAL_INPUT", reply.message);
      }
      const left = deadline - Date.now();
      if (left <= 0 || !this.waitTick(seen, left)) {
        this.stop();
        throw new ToolbeltError("ETIMEOUT", options.timeoutMessage, {
          details: { budget_ms: options.budgetMs },
        });
      }
    }
  }
}

// Runs in the worker: tests each line, the compiled regex kept for the next call with the same pattern.
const LINE_TEST_PROGRAM = `(() => {
  let key = "";
  let re;
  return ({ source, flags, lines }) => {
    if (key !== flags + "/" + source) {
      re = new RegExp(source, flags.replace(/[gy]/g, ""));
      key = flags + "/" + source;
    }
    return lines.map((line) => re.test(line));
  };
})()`;

let lineWorker: BudgetedWorker | undefined;

export type SafeTestOptions = {
  budgetMs?: number;
  /** What the regex is, for the timeout message (`filter`, `tools.file.allowlist[0]`). */
  what?: string;
};

/**
 * `lines.map((l) => re.test(l))`, run off this thread: at most `budgetMs` (default
 * REGEX_BUDGET_MS) for all the lines, else ETIMEOUT naming the bound. Synchronous for callers that
 * must decide on the spot; the thread blocks at most the budget.
 */
export function testLinesSafely(
  re: RegExp,
  lines: readonly string[],
  options: SafeTestOptions = {},
): boolean[] {
  if (lines.length === 0) return [];
  const budgetMs = options.budgetMs ?? REGEX_BUDGET_MS;
  lineWorker ??= new BudgetedWorker(LINE_TEST_PROGRAM);
  return lineWorker.runSync<boolean[]>(
    { source: re.source, flags: re.flags, lines: [...lines] },
    {
      budgetMs,
      timeoutMessage: `${options.what ?? "the regex"} /${re.source}/${re.flags} did not finish within its budget of ${budgetMs} ms over ${lines.length} line(s): it backtracks catastrophically (nested quantifiers such as (a+)+ or overlapping alternatives such as (a|aa)+); write it without the nesting`,
    },
  );
}
