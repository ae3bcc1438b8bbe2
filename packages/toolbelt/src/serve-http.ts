// `toolbelt serve --http` composed: the server is @toolbelt/bridge's; this file hands it the
// session factory (every family, through createToolbelt) and the ui family's question store.
import {
  type HttpServeOptions as BridgeServeOptions,
  type HttpServer,
  startHttpServer as start,
} from "@toolbelt/bridge";
import { answerQuestion, pendingQuestions, takeLateAnswers } from "@toolbelt/ui";
import { createToolbelt, type ToolbeltOptions } from "./create.js";

export type { HttpServer };

export type HttpServeOptions = Omit<BridgeServeOptions, "openSession" | "questions" | "page"> & {
  /** What every session is created with besides its root and client. */
  session?: Omit<ToolbeltOptions, "root" | "client">;
};

export function startHttpServer({ session, ...options }: HttpServeOptions): Promise<HttpServer> {
  return start({
    ...options,
    openSession: ({ root, plugins, client }) =>
      createToolbelt({ ...session, root, client, plugins: [...(session?.plugins ?? []), ...plugins] }),
    questions: { pending: pendingQuestions, answer: answerQuestion, takeLate: takeLateAnswers },
    page: consolePage,
  });
}

/** The console page from @toolbelt/console when it is installed (the server shows a note otherwise). */
async function consolePage(): Promise<string> {
  // A computed specifier keeps the bundler from inlining an optional package.
  const specifier = ["@toolbelt", "console"].join("/");
  const mod = (await import(specifier)) as { consolePage?: () => string };
  if (typeof mod.consolePage !== "function") throw new Error("@toolbelt/console has no consolePage");
  return mod.consolePage();
}
