import { promises as fs, statSync } from "node:fs";
import path from "node:path";
import { ToolbeltError } from "@toolbelt/core";
import { Project, ts } from "ts-morph";
import type {
  CallHierarchyIncomingCall,
  CallHierarchyItem,
  CallHierarchyOutgoingCall,
  Diagnostic,
  DocumentSymbol,
  Hover,
  Location,
  Range,
  SymbolInformation,
  TextEdit,
  WorkspaceEdit,
} from "vscode-languageserver-protocol";
import type { DiagnosticsOutcome } from "./client.js";
import { RootFileSystem } from "./fallback-fs.js";
import { type ProjectFiles, projectFiles } from "./project-files.js";
import { TS_EXTENSIONS } from "./servers.js";
import { fromUri, toUri } from "./uri.js";
import { walkProject } from "./walk.js";

type Position = { line: number; character: number };
type PositionParams = { textDocument: { uri: string }; position: Position };

/**
 * The in-process TypeScript/JavaScript backend used when no server binary can be found: ts-morph's
 * language service answering the same LSP requests with LSP-shaped results.
 *
 * It runs in process, not in the sandbox language servers get, so its file system is confined to the
 * root (see RootFileSystem): a tsconfig or an import pointing outside finds nothing there.
 */
export class TsMorphBackend {
  readonly root: string;
  readonly #project: Project;
  readonly #fs: RootFileSystem;
  readonly #mtimes = new Map<string, number>();
  readonly #versions = new Map<string, number>();

  /** `files`: how project files are opened (the session's checked open); by default core's, over the root. */
  constructor(root: string, options: { files?: ProjectFiles } = {}) {
    this.root = root;
    this.#fs = new RootFileSystem(options.files ?? projectFiles(root));
    const fileSystem = this.#fs;
    const tsconfig = path.join(root, "tsconfig.json");
    if (this.#fs.fileExistsSync(tsconfig)) {
      this.#project = new Project({ tsConfigFilePath: tsconfig, fileSystem });
    } else {
      // Roughly what tsserver gives a loose folder: JS allowed, modern target, strict checks.
      this.#project = new Project({
        fileSystem,
        compilerOptions: {
          allowJs: true,
          target: ts.ScriptTarget.ES2022,
          module: ts.ModuleKind.NodeNext,
          moduleResolution: ts.ModuleResolutionKind.NodeNext,
          strict: true,
          skipLibCheck: true,
          noEmit: true,
        },
      });
      // Added one by one: the file system takes paths, not globs.
      for (const file of walkProject(root, TS_EXTENSIONS, 5000).files)
        this.#project.addSourceFileAtPathIfExists(file);
    }
    for (const sf of this.#project.getSourceFiles()) {
      const file = sf.getFilePath();
      try {
        this.#mtimes.set(file, statSync(file).mtimeMs);
      } catch {
        // in memory only
      }
    }
  }

  get label(): string {
    return `ts-morph fallback (TypeScript ${ts.version}, in process)`;
  }

  get #ls(): ts.LanguageService {
    return this.#project.getLanguageService().compilerObject;
  }

  /** Re-reads every project file whose mtime changed, and adds `abs` when it is new. */
  async sync(abs: string): Promise<void> {
    await this.syncOpen();
    const file = path.normalize(abs);
    if (!this.#project.getSourceFile(file)) {
      if (!this.#fs.fileExistsSync(file)) throw new ToolbeltError("ENOENT", `no such file: ${abs}`);
      this.#project.addSourceFileAtPath(file);
      this.#mtimes.set(file, (await fs.stat(file)).mtimeMs);
      this.#versions.set(file, 1);
    }
  }

  async syncOpen(): Promise<void> {
    // statSync: hundreds of tiny stats cost less this way than with an await each.
    for (const sf of this.#project.getSourceFiles()) {
      const file = sf.getFilePath();
      if (!this.#mtimes.has(file)) continue;
      let mtime: number;
      try {
        mtime = statSync(file).mtimeMs;
      } catch {
        this.#project.removeSourceFile(sf);
        this.#mtimes.delete(file);
        continue;
      }
      if (mtime === this.#mtimes.get(file)) continue;
      this.#mtimes.set(file, mtime);
      sf.refreshFromFileSystemSync();
      this.#versions.set(file, (this.#versions.get(file) ?? 1) + 1);
    }
  }

  supports(_method: string): boolean {
    return true;
  }

  async shutdown(): Promise<void> {
    // Nothing runs outside this process.
  }

  isOpen(_abs: string): boolean {
    return true;
  }

  release(_abs: string): void {
    // The whole program stays loaded in process.
  }

  notifyChanged(_abs: string[]): void {
    // syncOpen() compares mtimes before every request.
  }

  /** The text the backend holds for a file (what an edit it returns was computed against). */
  text(abs: string): string | undefined {
    return this.#project.getSourceFile(abs)?.getFullText();
  }

  /** Diagnostics of the file's current content, or of `text` in its place (the content before a write). */
  async diagnostics(abs: string, options: { text?: string } = {}): Promise<DiagnosticsOutcome> {
    const file = path.normalize(abs);
    if (options.text === undefined) await this.sync(abs);
    else this.#hold(file, options.text);
    const sf = this.#sourceFile(file);
    const list = [...this.#ls.getSyntacticDiagnostics(file), ...this.#ls.getSemanticDiagnostics(file)];
    return {
      status: "ok",
      version: this.#versions.get(file) ?? 1,
      diagnostics: list.map((d) => toDiagnostic(d, sf)),
    };
  }

  /** Puts `text` in place of the file's content in memory; the next sync re-reads the file. */
  #hold(file: string, text: string): void {
    const sf = this.#project.getSourceFile(file);
    if (sf?.getFullText() === text) return;
    if (sf) sf.replaceWithText(text);
    else this.#project.createSourceFile(file, text, { overwrite: true });
    // No mtime on disk matches this text: syncOpen reads the file again on the next request.
    this.#mtimes.set(file, -1);
    this.#versions.set(file, (this.#versions.get(file) ?? 0) + 1);
  }

  #sourceFile(file: string): ts.SourceFile {
    const sf = this.#ls.getProgram()?.getSourceFile(file);
    if (!sf) throw new ToolbeltError("ENOENT", `not part of the TypeScript program: ${file}`);
    return sf;
  }

  #offset(params: PositionParams): { file: string; pos: number } {
    const file = fromUri(params.textDocument.uri) ?? params.textDocument.uri;
    return { file, pos: offsetOf(this.#sourceFile(file), params.position) };
  }

  #location(file: string, span: ts.TextSpan): Location | undefined {
    const sf = this.#ls.getProgram()?.getSourceFile(file);
    if (!sf) return undefined;
    return { uri: toUri(file), range: rangeOf(sf, span) };
  }

  /** Answers the LSP requests the tools send, as a server would. */
  async request<R>(method: string, params: unknown): Promise<R> {
    return this.#answer(method, params) as R;
  }

  #answer(method: string, params: unknown): unknown {
    const ls = this.#ls;
    switch (method) {
      case "textDocument/definition":
      case "textDocument/implementation": {
        const { file, pos } = this.#offset(params as PositionParams);
        const found =
          method === "textDocument/definition"
            ? ls.getDefinitionAtPosition(file, pos)
            : ls.getImplementationAtPosition(file, pos);
        return (found ?? []).map((d) => this.#location(d.fileName, d.textSpan)).filter(Boolean);
      }
      case "textDocument/references": {
        const { file, pos } = this.#offset(params as PositionParams);
        const include =
          (params as { context?: { includeDeclaration?: boolean } }).context?.includeDeclaration ?? true;
        const out: Location[] = [];
        for (const symbol of ls.findReferences(file, pos) ?? []) {
          for (const ref of symbol.references) {
            if (!include && ref.isDefinition) continue;
            const loc = this.#location(ref.fileName, ref.textSpan);
            if (loc) out.push(loc);
          }
        }
        return out;
      }
      case "textDocument/hover": {
        const { file, pos } = this.#offset(params as PositionParams);
        const info = ls.getQuickInfoAtPosition(file, pos);
        if (!info) return null;
        const signature = ts.displayPartsToString(info.displayParts);
        const docs = ts.displayPartsToString(info.documentation);
        const hover: Hover = {
          contents: {
            kind: "markdown",
            value: `\`\`\`typescript\n${signature}\n\`\`\`${docs ? `\n${docs}` : ""}`,
          },
        };
        return hover;
      }
      case "textDocument/documentSymbol": {
        const file = fromUri((params as { textDocument: { uri: string } }).textDocument.uri) ?? "";
        const sf = this.#sourceFile(file);
        const tree = ls.getNavigationTree(file);
        return (tree.childItems ?? []).map((item) => toDocumentSymbol(item, sf));
      }
      case "workspace/symbol": {
        const query = (params as { query: string }).query;
        const items = ls.getNavigateToItems(query, 500, undefined, true, true);
        const out: SymbolInformation[] = [];
        for (const item of items) {
          const loc = this.#location(item.fileName, item.textSpan);
          if (!loc) continue;
          out.push({
            name: item.name,
            kind: symbolKind(item.kind),
            location: loc,
            ...(item.containerName ? { containerName: item.containerName } : {}),
          });
        }
        return out;
      }
      case "textDocument/prepareRename":
        return null;
      case "textDocument/rename": {
        const { file, pos } = this.#offset(params as PositionParams);
        const newName = (params as { newName: string }).newName;
        const info = ls.getRenameInfo(file, pos, { allowRenameOfImportPath: false });
        if (!info.canRename) throw new ToolbeltError("EINVAL_INPUT", info.localizedErrorMessage);
        const locations = ls.findRenameLocations(file, pos, false, false, {
          providePrefixAndSuffixTextForRename: true,
        });
        const changes: Record<string, TextEdit[]> = {};
        for (const loc of locations ?? []) {
          const sf = this.#ls.getProgram()?.getSourceFile(loc.fileName);
          if (!sf) continue;
          const uri = toUri(loc.fileName);
          changes[uri] ??= [];
          changes[uri].push({
            range: rangeOf(sf, loc.textSpan),
            newText: `${loc.prefixText ?? ""}${newName}${loc.suffixText ?? ""}`,
          });
        }
        const edit: WorkspaceEdit = { changes };
        return edit;
      }
      case "textDocument/prepareCallHierarchy": {
        const { file, pos } = this.#offset(params as PositionParams);
        const found = ls.prepareCallHierarchy(file, pos);
        const items = found === undefined ? [] : Array.isArray(found) ? found : [found];
        return items.map((item) => this.#callItem(item)).filter(Boolean);
      }
      case "callHierarchy/incomingCalls": {
        const item = (params as { item: CallHierarchyItem }).item;
        const { file, pos } = this.#itemOffset(item);
        const calls: CallHierarchyIncomingCall[] = [];
        for (const call of ls.provideCallHierarchyIncomingCalls(file, pos)) {
          const from = this.#callItem(call.from);
          const sf = this.#ls.getProgram()?.getSourceFile(call.from.file);
          if (from && sf) calls.push({ from, fromRanges: call.fromSpans.map((s) => rangeOf(sf, s)) });
        }
        return calls;
      }
      case "callHierarchy/outgoingCalls": {
        const item = (params as { item: CallHierarchyItem }).item;
        const { file, pos } = this.#itemOffset(item);
        const sf = this.#sourceFile(file);
        const calls: CallHierarchyOutgoingCall[] = [];
        for (const call of ls.provideCallHierarchyOutgoingCalls(file, pos)) {
          const to = this.#callItem(call.to);
          if (to) calls.push({ to, fromRanges: call.fromSpans.map((s) => rangeOf(sf, s)) });
        }
        return calls;
      }
      default:
        throw new ToolbeltError("EUNAVAILABLE", `the ts-morph fallback does not answer ${method}`);
    }
  }

  #itemOffset(item: CallHierarchyItem): { file: string; pos: number } {
    const file = fromUri(item.uri) ?? item.uri;
    return { file, pos: offsetOf(this.#sourceFile(file), item.selectionRange.start) };
  }

  #callItem(item: ts.CallHierarchyItem): CallHierarchyItem | undefined {
    const sf = this.#ls.getProgram()?.getSourceFile(item.file);
    if (!sf) return undefined;
    return {
      name: item.name,
      kind: symbolKind(item.kind),
      uri: toUri(item.file),
      range: rangeOf(sf, item.span),
      selectionRange: rangeOf(sf, item.selectionSpan),
      ...(item.containerName ? { detail: item.containerName } : {}),
    };
  }
}

function offsetOf(sf: ts.SourceFile, position: Position): number {
  const starts = sf.getLineStarts();
  const line = Math.min(Math.max(position.line, 0), starts.length - 1);
  const start = starts[line] ?? 0;
  const end = line + 1 < starts.length ? (starts[line + 1] ?? sf.text.length) : sf.text.length;
  return Math.min(start + Math.max(position.character, 0), end);
}

function rangeOf(sf: ts.SourceFile, span: ts.TextSpan): Range {
  const start = sf.getLineAndCharacterOfPosition(span.start);
  const end = sf.getLineAndCharacterOfPosition(span.start + span.length);
  return { start, end };
}

/** The same shape tsserver gives (message chains flattened with newlines). */
function toDiagnostic(d: ts.Diagnostic, sf: ts.SourceFile): Diagnostic {
  const start = d.start ?? 0;
  const range = rangeOf(sf, { start, length: d.length ?? 0 });
  const severity =
    d.category === ts.DiagnosticCategory.Warning
      ? 2
      : d.category === ts.DiagnosticCategory.Suggestion
        ? 4
        : d.category === ts.DiagnosticCategory.Message
          ? 3
          : 1;
  return {
    range,
    message: ts.flattenDiagnosticMessageText(d.messageText, "\n"),
    severity,
    code: d.code,
    source: "typescript",
  };
}

function toDocumentSymbol(item: ts.NavigationTree, sf: ts.SourceFile): DocumentSymbol {
  const span = item.spans[0] ?? { start: 0, length: 0 };
  const range = rangeOf(sf, span);
  const selection = item.nameSpan ? rangeOf(sf, item.nameSpan) : range;
  const symbol: DocumentSymbol = {
    name: item.text,
    kind: symbolKind(item.kind),
    range,
    selectionRange: selection,
  };
  const children = (item.childItems ?? []).map((child) => toDocumentSymbol(child, sf));
  if (children.length) symbol.children = children;
  return symbol;
}

/** ScriptElementKind → LSP SymbolKind. */
function symbolKind(kind: string): DocumentSymbol["kind"] {
  const map: Record<string, number> = {
    module: 2,
    class: 5,
    "local class": 5,
    interface: 11,
    type: 26,
    enum: 10,
    "enum member": 22,
    var: 13,
    "local var": 13,
    let: 13,
    const: 14,
    function: 12,
    "local function": 12,
    method: 6,
    getter: 7,
    setter: 7,
    property: 7,
    accessor: 7,
    constructor: 9,
    parameter: 13,
    "type parameter": 26,
    alias: 13,
  };
  return (map[kind] ?? 13) as DocumentSymbol["kind"];
}
