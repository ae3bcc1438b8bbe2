// The API report: for each public entry point (the "." export of every published package), API
// Extractor reads the built .d.ts and writes what it exports, signatures included, to api/NAME.api.md.
//
//   node scripts/api-report.mjs --check    (npm run api:check; CI)  fails when a report would change
//   node scripts/api-report.mjs            (npm run api:update)     rewrites the reports
//
// Run after `npm run build`: the reports are made from dist/*.d.ts, exactly what users compile against.
// Subpaths (`@toolbelt/core/internal`, the families' `/contrib`, `@toolbelt/bridge/wire`,
// `@toolbelt/core/config-paths`) are toolbelt's own plumbing and carry no stability promise: not reported.
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { Extractor, ExtractorConfig } from "@microsoft/api-extractor";

const REPO = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const REPORTS = path.join(REPO, "api");
const check = process.argv.includes("--check");

/** Every published package of the workspaces (packages/*, plugins/*). */
function publicPackages() {
  return ["packages", "plugins"].flatMap((parent) =>
    readdirSync(path.join(REPO, parent), { withFileTypes: true })
      .filter((e) => e.isDirectory() && existsSync(path.join(REPO, parent, e.name, "package.json")))
      .map((e) => path.join(REPO, parent, e.name))
      .filter((dir) => !JSON.parse(readFileSync(path.join(dir, "package.json"), "utf8")).private),
  );
}

const reportName = (dir) =>
  JSON.parse(readFileSync(path.join(dir, "package.json"), "utf8")).name.replace(/^@toolbelt\//, "");

/**
 * Every entry exports public API and we use no release tags, so API Extractor's `// @public` lines
 * say nothing; `(undocumented)` would make adding a doc comment an API change. Both go; `@deprecated`
 * stays.
 */
function normalise(report) {
  return report
    .split("\n")
    .flatMap((line) => {
      const tags = /^(\s*)\/\/ ((?:@public|\(undocumented\)|@deprecated)(?: |$))+$/.exec(line);
      if (!tags) return [line];
      const kept = line.includes("@deprecated") ? `${tags[1]}// @deprecated` : "";
      return kept ? [kept] : [];
    })
    .join("\n");
}

const quiet = { logLevel: "none" };
const temp = mkdtempSync(path.join(os.tmpdir(), "tb-api-report-"));
mkdirSync(REPORTS, { recursive: true });
const changed = [];
try {
  for (const dir of publicPackages()) {
    const pkg = JSON.parse(readFileSync(path.join(dir, "package.json"), "utf8"));
    const entry = path.join(dir, pkg.exports["."].types);
    if (!existsSync(entry))
      throw new Error(`${path.relative(REPO, entry)} is missing: run \`npm run build\` first`);
    const name = reportName(dir);
    const config = ExtractorConfig.prepare({
      configObject: {
        projectFolder: dir,
        mainEntryPointFilePath: entry,
        compiler: {
          overrideTsconfig: {
            compilerOptions: {
              module: "NodeNext",
              moduleResolution: "NodeNext",
              target: "ES2022",
              lib: ["ES2023"],
              types: ["node"],
              strict: true,
              skipLibCheck: true,
            },
            files: [entry],
          },
        },
        apiReport: {
          enabled: true,
          reportFileName: `${name}.api.md`,
          reportFolder: temp,
          reportTempFolder: path.join(temp, "work"),
          // A type a public signature uses but the entry does not export is part of the API too.
          includeForgottenExports: true,
        },
        newlineKind: "lf",
        docModel: { enabled: false },
        dtsRollup: { enabled: false },
        tsdocMetadata: { enabled: false },
        messages: {
          compilerMessageReporting: { default: { logLevel: "warning" } },
          extractorMessageReporting: {
            default: { logLevel: "warning", addToApiReportFile: true },
            // No release tags (@public/@beta) here: everything an entry exports is public.
            "ae-missing-release-tag": quiet,
            // Doc comments are not part of the report.
            "ae-undocumented": quiet,
            // The type itself is in the report (includeForgottenExports); its source line would only churn.
            "ae-forgotten-export": quiet,
          },
          // Doc comments are written for people, not checked as TSDoc.
          tsdocMessageReporting: { default: quiet },
        },
      },
      configObjectFullPath: undefined,
      packageJsonFullPath: path.join(dir, "package.json"),
    });
    // localBuild: API Extractor writes its report to the temp folder; the comparison is ours (below).
    const result = Extractor.invoke(config, {
      localBuild: true,
      // Its notes on the temporary report file and its bundled compiler are noise here.
      messageCallback: (message) => {
        if (message.messageId.startsWith("console-")) message.handled = true;
      },
    });
    if (result.errorCount > 0)
      throw new Error(`API Extractor failed on ${pkg.name}: ${result.errorCount} error(s)`);
    const report = normalise(readFileSync(path.join(temp, `${name}.api.md`), "utf8"));
    const file = path.join(REPORTS, `${name}.api.md`);
    if (existsSync(file) && readFileSync(file, "utf8") === report) continue;
    changed.push(`api/${name}.api.md`);
    if (!check) writeFileSync(file, report);
  }
  // A report whose package is gone (or no longer published) is stale too.
  const expected = new Set(publicPackages().map((dir) => `${reportName(dir)}.api.md`));
  for (const file of readdirSync(REPORTS).filter((f) => f.endsWith(".api.md") && !expected.has(f))) {
    changed.push(`api/${file} (no such public package)`);
    if (!check) rmSync(path.join(REPORTS, file));
  }
} finally {
  rmSync(temp, { recursive: true, force: true });
}

if (changed.length > 0 && check) {
  console.error(
    `The public API changed: ${changed.join(", ")}.\n` +
      "If the change is meant, run `npm run build && npm run api:update`, commit the reports with a changeset " +
      "(a removed or changed export is breaking for its users); otherwise undo it.",
  );
  process.exit(1);
}
console.log(
  changed.length > 0 ? `API reports updated: ${changed.join(", ")}` : "API reports match the public API.",
);
