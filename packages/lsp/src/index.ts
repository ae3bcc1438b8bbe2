import {
  type DoctorCheck,
  type DoctorContext,
  definePlugin,
  type Plugin,
  type Session,
} from "@toolbelt/core";
import { contributions } from "./contrib.js";
import { diagnosticText, toDiagnosticItem } from "./format.js";
import { type LspFamilyOptions, managerOf, resolveOptions } from "./manager.js";
import {
  builtinTypescriptSpec,
  configuredSpecs,
  findTsgo,
  findTypescriptLanguageServer,
  tsserverPathFor,
  whichSync,
} from "./servers.js";
import { createTools, errorKeyOf } from "./tools/index.js";

export { type DiagnosticsOutcome, LspClient } from "./client.js";
export type { TsMorphBackend } from "./fallback.js";
export type { LaunchHost } from "./launch.js";
export { type Backend, type LspFamilyOptions, LspManager } from "./manager.js";
export type { LspResults } from "./results.js";
export type { ServerSpec, TsServerChoice } from "./servers.js";

const AFTER_WRITE_SHOWN = 20;

/** Runs after every write of the session: keeps servers in step, and reports new errors when configured. */
async function afterWrite(
  session: Session,
  opts: LspFamilyOptions,
  abs: string,
  rel: string,
): Promise<string | undefined> {
  const manager = managerOf(session, opts);
  await manager.filesChanged(session.root, [abs]);
  if (!session.config.lsp_diagnostics_after_edit) return undefined;
  if (!manager.choose(session.root, session.config, abs)) return undefined;
  const before = manager.lastErrors.get(abs);
  const { outcome } = await manager.diagnostics(session.root, session.config, abs);
  if (outcome.status === "timed_out")
    return `lsp: diagnostics for ${rel} timed out after ${manager.options.diagnosticsTimeoutMs} ms (unknown, not "no problems")`;
  const errors = outcome.diagnostics.map(toDiagnosticItem).filter((d) => d.severity === "error");
  manager.lastErrors.set(abs, new Set(errors.map(errorKeyOf)));
  const fresh = before ? errors.filter((d) => !before.has(errorKeyOf(d))) : errors;
  if (fresh.length === 0) return undefined;
  const head = before
    ? `lsp: ${fresh.length} new error${fresh.length === 1 ? "" : "s"} in ${rel} after this write (${errors.length} in total)`
    : `lsp: ${errors.length} error${errors.length === 1 ? "" : "s"} in ${rel} after this write`;
  const shown = fresh.slice(0, AFTER_WRITE_SHOWN).map((d) => `  ${d.line}: ${diagnosticText(d)}`);
  if (fresh.length > AFTER_WRITE_SHOWN)
    shown.push(`  … ${fresh.length - AFTER_WRITE_SHOWN} more (lsp_diagnostics lists them)`);
  return [head, ...shown].join("\n");
}

function doctor(opts: LspFamilyOptions, ctx: DoctorContext): DoctorCheck[] {
  const resolved = resolveOptions(opts);
  const checks: DoctorCheck[] = [];
  // Doctor is not told whether the project is trusted: it reports what an untrusted session would run.
  const trust = { root: ctx.root, trusted: false };
  const tsls = findTypescriptLanguageServer(trust);
  const tsserver = tsserverPathFor(trust);
  checks.push(
    tsls
      ? {
          name: "typescript-language-server",
          status: "ok",
          detail: `${tsls.origin}; TypeScript from ${tsserver ?? "the project's node_modules"}${resolved.typescriptServer === "typescript-language-server" ? " (serves TS/JS)" : ""}`,
        }
      : { name: "typescript-language-server", status: "missing", detail: "not installed and not on PATH" },
  );
  const tsgo = findTsgo(trust);
  checks.push(
    tsgo
      ? {
          name: "tsgo",
          status: "ok",
          detail: `${tsgo.origin} (TypeScript 7 \`tsgo --lsp\`${resolved.typescriptServer === "tsgo" ? ", serves TS/JS" : "; set TOOLBELT_LSP_TS_SERVER=tsgo to use it"})`,
        }
      : {
          name: "tsgo",
          status: "missing",
          detail: "@typescript/native-preview not installed and tsgo not on PATH (optional)",
        },
  );
  for (const spec of configuredSpecs(ctx.config)) {
    const found = spec.command.includes("/") ? spec.command : whichSync(spec.command, { outside: ctx.root });
    checks.push({
      name: `config:${spec.name}`,
      status: found ? "ok" : "missing",
      detail: `${found ?? `${spec.command} not found`} for ${spec.extensions.join(" ") || "(no extensions)"}`,
    });
  }
  const serving = builtinTypescriptSpec(trust, resolved.typescriptServer);
  checks.push({
    name: "ts-morph fallback",
    status: resolved.fallback === "off" ? "skipped" : "ok",
    detail:
      resolved.fallback === "force"
        ? "forced: serves TS/JS in process"
        : resolved.fallback === "off"
          ? "disabled"
          : serving
            ? "available; used only when no TypeScript server binary is found"
            : "serves TS/JS in process (no server binary found)",
  });
  return checks;
}

/**
 * The in-process ts-morph backend (the fallback when no TypeScript server binary is found), loaded
 * on first use: it brings the TypeScript compiler, which would otherwise load with the family.
 */
export async function loadTsMorphBackend(): Promise<typeof import("./fallback.js").TsMorphBackend> {
  return (await import("./fallback.js")).TsMorphBackend;
}

/** The lsp family with options (fallback mode, TypeScript server, timeouts). */
export function createLspFamily(options: LspFamilyOptions = {}): Plugin {
  return definePlugin({
    name: "lsp",
    contributes: contributions,
    tools: createTools(options),
    setup(session) {
      // Made now, not on first use: the manager's trust is for the root the session starts in.
      managerOf(session, options);
      session.hooks.afterWrite.add((info) => afterWrite(session, options, info.abs, info.rel));
    },
    doctor: (ctx) => doctor(options, ctx),
  });
}

/** The lsp family as a plugin: its tools, registered by createToolbelt(). */
export const family: Plugin = createLspFamily();

export { contributions, type LspServerConfig, lspConfig } from "./contrib.js";
