/// <reference lib="dom" />
// The page: follows one session of `toolbelt serve --http` live, or draws a replayed file.
import { type ComponentChild, h, render } from "preact";
import { useEffect, useMemo, useState } from "preact/hooks";
import { ConsoleApi, readLocationParams, type SessionInfo } from "./api.js";
import {
  applyEvent,
  applyPending,
  type ConsoleState,
  emptyState,
  pendingApprovals,
  pendingQuestions,
} from "./model.js";
import { loadReplay } from "./replay.js";
import { type Actions, Attention, LooseShells, Timeline, TodoDock } from "./views.js";

/** Holds the state and wakes the view at most once a frame, however fast events arrive. */
class Store {
  state: ConsoleState = emptyState();
  /** Bumped by reset, so a stream that was replaced cannot write into the new picture. */
  epoch = 0;
  readonly #listeners = new Set<() => void>();
  #scheduled = false;

  reset(): void {
    this.state = emptyState();
    this.epoch++;
    this.changed();
  }

  event(event: unknown, epoch: number): void {
    if (epoch !== this.epoch) return;
    if (applyEvent(this.state, event as Record<string, unknown>)) this.changed();
  }

  pending(pending: unknown, epoch: number): void {
    if (epoch !== this.epoch) return;
    const before = this.state.version;
    applyPending(this.state, pending);
    if (this.state.version !== before) this.changed();
  }

  changed(): void {
    if (this.#scheduled) return;
    this.#scheduled = true;
    requestAnimationFrame(() => {
      this.#scheduled = false;
      for (const fn of this.#listeners) fn();
    });
  }

  subscribe(fn: () => void): () => void {
    this.#listeners.add(fn);
    return () => this.#listeners.delete(fn);
  }
}

type Connection = "idle" | "connecting" | "open" | "reconnecting" | "closed" | "replay" | "error";

const STATUS_TEXT: Record<Connection, string> = {
  idle: "not connected",
  connecting: "connecting…",
  open: "live",
  reconnecting: "reconnecting…",
  closed: "disconnected",
  replay: "replay",
  error: "error",
};

function App(props: {
  store: Store;
  api: ConsoleApi | undefined;
  initialSession: string | undefined;
}): ComponentChild {
  const { store, api } = props;
  const [, setTick] = useState(0);
  const [sessions, setSessions] = useState<SessionInfo[]>([]);
  const [session, setSession] = useState<string | undefined>(props.initialSession);
  const [connection, setConnection] = useState<Connection>(api ? "connecting" : "idle");
  const [message, setMessage] = useState<string | undefined>(
    api
      ? undefined
      : "No token in the address: open the URL `toolbelt serve --http` printed, or open a replay file.",
  );
  const [replayName, setReplayName] = useState<string | undefined>();

  useEffect(() => store.subscribe(() => setTick((n) => n + 1)), [store]);

  useEffect(() => {
    if (!api) return;
    let stopped = false;
    api.sessions().then(
      (list) => {
        if (stopped) return;
        setSessions(list);
        if (list.length === 0) setMessage("The server has no sessions yet.");
        setSession((current) => current ?? list[0]?.id);
      },
      (error: Error) => {
        setConnection("error");
        setMessage(`Could not list sessions: ${error.message}`);
      },
    );
    return () => {
      stopped = true;
    };
  }, [api]);

  useEffect(() => {
    if (!api || !session || replayName !== undefined) return;
    store.reset();
    const epoch = store.epoch;
    setConnection("connecting");
    setMessage(undefined);
    const refreshPending = (): void => {
      api.pending(session).then(
        (pending) => store.pending(pending, epoch),
        () => {},
      );
    };
    const stop = api.follow(
      session,
      (event) => store.event(event, epoch),
      (status) => {
        setConnection(status);
        // Questions raised before the stream (re)opened are fetched, not replayed.
        if (status === "open") refreshPending();
      },
    );
    refreshPending();
    return stop;
  }, [api, session, replayName, store]);

  const actions: Actions | undefined = useMemo(() => {
    if (!api || !session || replayName !== undefined) return undefined;
    return {
      answer: async (questionId, answers, notes) => {
        await api.answer(session, questionId, answers, notes);
      },
      resolve: async (requestId, approved) => {
        await api.resolve(session, requestId, approved);
      },
    };
  }, [api, session, replayName]);

  const openReplay = async (ev: Event): Promise<void> => {
    const input = ev.currentTarget as HTMLInputElement;
    const file = input.files?.[0];
    if (!file) return;
    const text = await file.text();
    setReplayName(file.name);
    setConnection("replay");
    store.reset();
    const summary = loadReplay(store.state, text);
    store.changed();
    setMessage(
      `Replaying ${file.name}: ${summary.events} events${summary.skipped ? `, ${summary.skipped} unreadable lines skipped` : ""}.`,
    );
    input.value = "";
  };

  const state = store.state;
  const waiting = pendingQuestions(state).length + pendingApprovals(state).length;
  return h(
    "div",
    { class: "app" },
    h(
      "header",
      { class: "topbar" },
      h("h1", null, "toolbelt console"),
      api && sessions.length > 0 && replayName === undefined
        ? h(
            "select",
            {
              class: "session-picker",
              "aria-label": "Session",
              value: session,
              onChange: (ev: Event) => setSession((ev.currentTarget as HTMLSelectElement).value),
              // Sessions opened since the page loaded (POST /api/sessions) join the list.
              onFocus: () => {
                api.sessions().then(
                  (list) => list.length > 0 && setSessions(list),
                  () => {},
                );
              },
            },
            ...sessions.map((s) => h("option", { key: s.id, value: s.id }, `${s.id} — ${s.root}`)),
          )
        : null,
      replayName !== undefined ? h("span", { class: "replay-name" }, replayName) : null,
      h("span", { class: `status status-${connection}`, role: "status" }, STATUS_TEXT[connection]),
      waiting > 0
        ? h(
            "button",
            {
              type: "button",
              class: "waiting-pill",
              onClick: () => document.getElementById("waiting")?.scrollIntoView({ behavior: "smooth" }),
            },
            `${waiting} waiting for you`,
          )
        : null,
      h("span", { class: "spacer" }),
      replayName !== undefined && api
        ? h("button", { type: "button", onClick: () => setReplayName(undefined) }, "Back to live")
        : null,
      h(
        "label",
        { class: "button file-button" },
        "Open replay…",
        h("input", {
          type: "file",
          class: "replay-input",
          accept: ".jsonl,.json,.ndjson,.txt",
          onChange: openReplay,
        }),
      ),
    ),
    message ? h("p", { class: "message" }, message) : null,
    h(
      "div",
      { class: "layout" },
      h("main", null, h(Attention, { state, actions }), h(Timeline, { state })),
      h("aside", { class: "side" }, h(TodoDock, { todos: state.todos }), h(LooseShells, { state })),
    ),
  );
}

function boot(): void {
  const params = readLocationParams(location);
  const api = params.token ? new ConsoleApi(params.token) : undefined;
  const root = document.getElementById("app");
  if (!root) return;
  render(h(App, { store: new Store(), api, initialSession: params.session }), root);
}

boot();
