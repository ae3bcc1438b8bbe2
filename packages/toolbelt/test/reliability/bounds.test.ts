// Attacks on input bounds (issue 15 items 3 and 4), end to end through the built CLI: regexes that
// backtrack catastrophically (search_files on the JS engine, shell_session filter) and an edit_file
// whose search text is 20k lines of a 100k-line file. Before the fix each of these held the process
// for minutes (a search ignored SIGTERM for 11.5 min; an edit took 70–109 s and blocked serve --http).
import { type ChildProcess, spawn } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { readSse } from "@toolbelt/bridge";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { assertBuilt, BIN, cli, jsonLines, tempRoot } from "../cli-harness.js";
import { type HttpProcess, startHttp } from "../serve-fixture.js";

beforeAll(() => assertBuilt());

const EVIL = "a".repeat(48);
const JS = { TOOLBELT_SEARCH_ENGINE: "js" };

function line(id: string, tool: string, input: Record<string, unknown>): string {
  return `${JSON.stringify({ id, tool, input })}\n`;
}

type Answer = { id: string; result: Record<string, unknown> };

/** CPU seconds a process has used (user + system, every thread), from /proc/PID/stat. */
function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

async function exec(root: string, input: string, extra: string[] = [], env = JS): Promise<Answer[]> {
  const r = await cli(["exec", "--root", root, ...extra], { input, env, timeoutMs: 120_000 });
  return jsonLines(r.stdout).filter((l) => "id" in l) as unknown as Answer[];
}

describe("regex bounds: search_files on the JS engine", () => {
  it("answers each catastrophic pattern within its budget (a result or ETIMEOUT naming the bound), then keeps serving", async () => {
    const root = tempRoot("tb-bounds-");
    // `!y` puts the x line past the literal prefilter of (x+x+)+y.
    writeFileSync(path.join(root, "evil.txt"), `${EVIL}!\n${"x".repeat(48)}!y\n`);
    writeFileSync(path.join(root, "ok.txt"), "fine line\n");
    const patterns = ["(a+)+$", "(x+x+)+y", "(a|aa)+$", "(.*a){20}"];
    const input =
      patterns.map((q, i) => line(`p${i}`, "search_files", { query: q })).join("") +
      line("next", "search_files", { query: "fine" });
    const answers = await exec(root, input);
    expect(answers.map((a) => a.id)).toEqual(["p0", "p1", "p2", "p3", "next"]);
    for (const a of answers.slice(0, 3)) {
      expect(a.result, JSON.stringify(a.result)).toMatchObject({ kind: "error", code: "ETIMEOUT" });
      expect(String(a.result.message)).toMatch(/did not finish within its budget of \d+ ms .* in evil\.txt/);
    }
    // (.*a){20} matches the a line (it has 48 a's): a bounded pattern, answered with the match.
    const last = answers[3]?.result as Record<string, unknown>;
    expect(["search_results", "error"]).toContain(last.kind);
    if (last.kind === "error") expect(last.code).toBe("ETIMEOUT");
    expect(answers[4]?.result).toMatchObject({ kind: "search_results", matches: 1 });
  });

  it("ends promptly on SIGTERM while a catastrophic search is running", async () => {
    const root = tempRoot("tb-bounds-");
    // 24 MiB of evil lines: a budget of 26 s, far longer than the wait below.
    writeFileSync(path.join(root, "evil.txt"), `${EVIL}!\n`.repeat(500_000));
    const child: ChildProcess = spawn(process.execPath, [BIN, "exec", "--root", root], {
      env: { ...process.env, ...JS },
      stdio: ["pipe", "pipe", "pipe"],
    });
    child.stdin?.write(line("s", "search_files", { query: "(a+)+$" }));
    // Until the search has burned two CPU seconds: it is backtracking (starting node, reading the file
    // and handing it to the worker take far less), whatever the machine's load.
    await expect.poll(() => cpuSeconds(child.pid as number), { timeout: 60_000 }).toBeGreaterThan(2);
    expect(child.exitCode).toBeNull();
    const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
    child.kill("SIGTERM");
    const outcome = await Promise.race([
      exited,
      new Promise((r) => setTimeout(() => r("still running"), 10_000)),
    ]);
    if (outcome === "still running") child.kill("SIGKILL");
    expect(outcome).not.toBe("still running");
  });
});

describe("regex bounds: shell_session filter", () => {
  it("answers ETIMEOUT naming the budget for a catastrophic filter, and the next read works", async () => {
    const root = tempRoot("tb-bounds-");
    const startLine = line("start", "shell", {
      command: `printf '${EVIL}!\\nok line\\n'; sleep 20`,
      run_in_background: true,
    });
    // The shell id is only known from the first answer: run the session in two steps through stdin.
    const child = spawn(process.execPath, [BIN, "exec", "--root", root, "--allow", "shell"], {
      stdio: ["pipe", "pipe", "pipe"],
    });
    let out = "";
    child.stdout.on("data", (d) => {
      out += d;
    });
    const answer = async (id: string): Promise<Record<string, unknown>> => {
      const found = () => jsonLines(out).find((l) => l.id === id);
      await expect.poll(found, { timeout: 60_000, message: `no answer for ${id}` }).toBeDefined();
      return found()?.result as Record<string, unknown>;
    };
    child.stdin.write(startLine);
    const started = await answer("start");
    expect(started.kind, JSON.stringify(started)).toBe("shell_started");
    const id = String(started.shell_id);
    // Until the command's output is there to filter (a read waits for its line).
    child.stdin.write(
      line("ready", "shell_session", {
        operation: "read",
        shell_id: id,
        cursor: 0,
        filter: "^ok",
        wait_ms: 30_000,
      }),
    );
    expect(await answer("ready")).toMatchObject({ kind: "shell_session", output: "ok line" });
    for (const [n, filter] of ["(a+)+$", "(a|aa)+$"].entries()) {
      child.stdin.write(
        line(`evil${n}`, "shell_session", { operation: "read", shell_id: id, cursor: 0, filter }),
      );
      const evil = await answer(`evil${n}`);
      expect(evil, JSON.stringify(evil)).toMatchObject({ kind: "error", code: "ETIMEOUT" });
      expect(String(evil.message)).toMatch(/filter .* did not finish within its budget of 1000 ms/);
    }
    child.stdin.write(
      line("next", "shell_session", { operation: "read", shell_id: id, cursor: 0, filter: "^ok" }),
    );
    expect(await answer("next")).toMatchObject({ kind: "shell_session", output: "ok line" });
    child.stdin.write(line("kill", "shell_session", { operation: "kill", shell_id: id }));
    await answer("kill");
    child.stdin.end();
    await new Promise((r) => child.once("exit", r));
  });
});

describe("regex bounds: an untrusted project's allowlist", () => {
  it("refuses the call with ETIMEOUT naming the pattern instead of hanging on it", async () => {
    // An allowlist only tightens, so an untrusted checkout's applies: its patterns are attacker input.
    const root = tempRoot("tb-bounds-");
    mkdirSync(path.join(root, "configs"));
    writeFileSync(
      path.join(root, "configs/app.json"),
      JSON.stringify({ tools: { files: { allowlist: ["^(a+)+$"] } } }),
    );
    writeFileSync(path.join(root, `${EVIL}!`), "hi\n");
    const answers = await exec(
      root,
      line("evil", "read_file", { path: `${EVIL}!` }) + line("next", "list_dir", { path: "." }),
    );
    expect(answers[0]?.result).toMatchObject({ kind: "error", code: "ETIMEOUT" });
    expect(String(answers[0]?.result.message)).toContain("tools.files.allowlist[0] /^(a+)+$/ did not finish");
    expect(answers[1]?.id).toBe("next");
  });
});

const N = 100_000;
const M = 20_000;

/** A 100k-line file (under the 2 MiB edit limit) and a 20k-line slice of it. */
function bigFile(root: string, name: string, make: (i: number) => string): string[] {
  const lines = Array.from({ length: N }, (_, i) => make(i));
  writeFileSync(path.join(root, name), `${lines.join("\n")}\n`);
  return lines;
}

describe("edit bounds: a 100k-line file and a 20k-line old_text", () => {
  it("applies the exact match, refuses the fuzzy non-match and the near miss in a repetitive file, all bounded", async () => {
    const root = tempRoot("tb-bounds-");
    const distinct = bigFile(root, "big.ts", (i) => `  v${i} = f(${i});`);
    const same = bigFile(root, "same.ts", () => "  x = 1;");
    const old = distinct.slice(40_000, 40_000 + M);
    // The replacement changes one line: the unified diff of the answer stays small.
    const replaced = [...old];
    replaced[M / 2] = "  changed();";
    const fuzzy = old.map((l) => l.trim());
    fuzzy[M / 2] = "nowhere();";
    const near = same.slice(0, M);
    near[M / 2] = "  x = 2;";
    const reindented = same.slice(0, M).map((l) => `\t${l.trim()}`);
    const input =
      line("exact", "edit_file", {
        path: "big.ts",
        old_text: old.join("\n"),
        new_text: replaced.join("\n"),
      }) +
      line("fuzzy", "edit_file", { path: "big.ts", old_text: fuzzy.join("\n"), new_text: "x" }) +
      line("near", "edit_file", { path: "same.ts", old_text: near.join("\n"), new_text: "x" }) +
      line("many", "edit_file", { path: "same.ts", old_text: reindented.join("\n"), new_text: "x" }) +
      line("read", "read_file", { path: "big.ts", offset: 50_001, limit: 1 }) +
      // 20k lines become one: the diff of the answer is bounded by the change, not a minimal-diff search.
      line("collapse", "edit_file", {
        path: "big.ts",
        old_text: distinct.slice(70_000, 70_000 + M).join("\n"),
        new_text: "  collapsed();",
      });
    const answers = await exec(root, input, [], {} as typeof JS);
    const by = Object.fromEntries(answers.map((a) => [a.id, a.result]));
    expect(by.exact, JSON.stringify(by.exact).slice(0, 300)).toMatchObject({
      kind: "edit_result",
      strategy: "exact",
    });
    expect(by.fuzzy).toMatchObject({ kind: "error", code: "ENO_MATCH" });
    expect(by.near).toMatchObject({ kind: "error", code: "ENO_MATCH" });
    expect(by.many).toMatchObject({ kind: "error", code: "EMULTI_MATCH" });
    expect(String(by.many?.message)).toMatch(/matches more than \d+ places/);
    expect(String(by.read?.content)).toContain("changed();");
    expect(by.collapse).toMatchObject({ kind: "edit_result", strategy: "exact" });
    const collapsed = (by.collapse as { files: Array<{ added: number; removed: number }> }).files[0];
    expect(collapsed).toMatchObject({ added: 1, removed: M });
  });
});

describe("serve --http: other sessions are served while a big call runs", () => {
  let server: HttpProcess;
  let root: string;
  let distinct: string[];
  const saved = process.env.TOOLBELT_SEARCH_ENGINE;

  beforeAll(async () => {
    root = tempRoot("tb-bounds-http-");
    distinct = bigFile(root, "big.ts", (i) => `  v${i} = f(${i});`);
    writeFileSync(path.join(root, "evil.txt"), `${EVIL}!\n`);
    writeFileSync(path.join(root, "small.txt"), "one\ntwo\nthree\n");
    process.env.TOOLBELT_SEARCH_ENGINE = "js";
    server = await startHttp(root);
  });
  afterAll(async () => {
    if (saved === undefined) delete process.env.TOOLBELT_SEARCH_ENGINE;
    else process.env.TOOLBELT_SEARCH_ENGINE = saved;
    await server?.stop();
  });

  const api = async (method: string, route: string, body?: unknown) => {
    const response = await fetch(`${server.url}${route}`, {
      method,
      headers: { authorization: `Bearer ${server.token}`, "content-type": "application/json" },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    return (await response.json()) as Record<string, unknown>;
  };
  const call = async (sid: string, tool: string, input: unknown) => {
    const body = await api("POST", `/api/sessions/${sid}/calls`, { tool, input });
    return body.result as Record<string, unknown>;
  };
  /** The first event of session `sid` that `match` accepts, read from its SSE stream (from its start). */
  const eventOf = async (
    sid: string,
    match: (event: Record<string, unknown>) => boolean,
  ): Promise<Record<string, unknown>> => {
    const controller = new AbortController();
    const response = await fetch(`${server.url}/api/sessions/${sid}/events?token=${server.token}&since=-1`, {
      signal: controller.signal,
    });
    try {
      for await (const message of readSse(response.body as ReadableStream<Uint8Array>)) {
        const event = JSON.parse(message.data) as Record<string, unknown>;
        if (match(event)) return event;
      }
      throw new Error(`the event stream of ${sid} ended first`);
    } finally {
      controller.abort();
    }
  };

  it("answers a second session's read_file while a catastrophic search runs in the first", async () => {
    const a = String((await api("POST", "/api/sessions", {})).id);
    const b = String((await api("POST", "/api/sessions", {})).id);
    const order: string[] = [];
    const started = eventOf(a, (e) => e.type === "tool_call" && e.tool === "search_files");
    const search = call(a, "search_files", { query: "(a+)+$" }).then((r) => {
      order.push("search");
      return r;
    });
    // Read once the search has begun (its tool_call event came through): a search that held the
    // server's thread would hold that event back too.
    await started;
    const read = call(b, "read_file", { path: "small.txt" }).then((r) => {
      order.push("read");
      return r;
    });
    expect(await read).toMatchObject({ kind: "file_content" });
    expect(await search).toMatchObject({ kind: "error", code: "ETIMEOUT" });
    expect(order).toEqual(["read", "search"]);
  });

  it("answers a second session's read_file alongside the 100k/20k edit, and the edit finishes", async () => {
    const a = String((await api("POST", "/api/sessions", {})).id);
    const b = String((await api("POST", "/api/sessions", {})).id);
    const old = distinct.slice(40_000, 40_000 + M);
    const replaced = [...old];
    replaced[0] = "  first();";
    const edit = call(a, "edit_file", {
      path: "big.ts",
      old_text: old.join("\n"),
      new_text: replaced.join("\n"),
    });
    // The matching itself is synchronous but bounded (well under a second); reading, writing and
    // the HTTP exchange around it are not, so the other session's calls interleave with it.
    const reads = await Promise.all(
      [1, 2, 3].map((n) => call(b, "read_file", { path: "small.txt", offset: n, limit: 1 })),
    );
    for (const r of reads) expect(["file_content", "file_unchanged"]).toContain(r.kind);
    expect(await edit).toMatchObject({ kind: "edit_result", strategy: "exact" });
  });
});
