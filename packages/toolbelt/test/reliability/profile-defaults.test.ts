import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { assertBuilt, cli, lacksLandlock, tempRoot } from "../cli-harness.js";

// Attacks on what a sandboxed command may read, end to end through the built CLI. Before reads were
// confined by default, every one of these printed the secret.

let root: string;
let outside: string;
let home: string;
const noLandlock = lacksLandlock();

const SECRET = "s3cr3t-outside-the-root";

async function shell(
  command: string,
  options: { root?: string; args?: string[] } = {},
): Promise<Record<string, unknown> & { stderr: string }> {
  const out = await cli(
    [
      "run",
      "shell",
      "--root",
      options.root ?? root,
      "--allow",
      "shell",
      "--input",
      JSON.stringify({ command }),
      ...(options.args ?? []),
    ],
    { env: { HOME: home } },
  );
  return { ...(JSON.parse(out.stdout) as Record<string, unknown>), stderr: out.stderr };
}

beforeAll(() => {
  assertBuilt();
  root = tempRoot("tb-reads-root-");
  outside = tempRoot("tb-reads-outside-");
  home = tempRoot("tb-reads-home-");
  writeFileSync(path.join(outside, "secret.txt"), `${SECRET}\n`);
  mkdirSync(path.join(home, ".ssh"));
  writeFileSync(path.join(home, ".ssh", "id_ed25519"), `${SECRET}-key\n`);
  mkdirSync(path.join(home, ".npm", "_cacache"), { recursive: true });
  writeFileSync(path.join(home, ".npm", "_cacache", "index"), "cached\n");
});

afterAll(() => {
  for (const dir of [root, outside, home]) rmSync(dir, { recursive: true, force: true });
});

describe("sandboxed commands read only the root, system paths and toolchain caches", () => {
  it.skipIf(noLandlock)("cat, grep -r and node cannot read a file outside the root", async () => {
    for (const command of [
      `cat ${outside}/secret.txt`,
      `grep -r s3cr3t ${outside}`,
      `node -e 'process.stdout.write(require("fs").readFileSync(${JSON.stringify(`${outside}/secret.txt`)}, "utf8"))'`,
    ]) {
      const r = await shell(command);
      expect(r.sandbox).toBe("landlock");
      expect(String(r.stdout), command).not.toContain(SECRET);
      expect(r.exit_code, command).not.toBe(0);
    }
    // The model is told why: the path is outside what commands may read, and which key widens it.
    const cat = await shell(`cat ${outside}/secret.txt`);
    expect(cat.sandbox_denied).toEqual([{ path: `${outside}/secret.txt`, why: "outside_readable" }]);
    expect(String(cat.sandbox_note)).toContain("agent.shell_sandbox_read_paths");
  });

  it.skipIf(noLandlock)("the user's keys stay unreadable while their npm cache is readable", async () => {
    const key = await shell(`cat ${home}/.ssh/id_ed25519`);
    expect(String(key.stdout)).not.toContain(SECRET);
    const cache = await shell(`cat ${home}/.npm/_cacache/index`);
    expect(cache).toMatchObject({ exit_code: 0, stdout: "cached\n" });
  });

  it.skipIf(noLandlock)(
    "an untrusted project cannot turn confinement off or widen what is readable; the user can",
    async () => {
      const project = tempRoot("tb-reads-project-");
      try {
        mkdirSync(path.join(project, "configs"));
        writeFileSync(
          path.join(project, "configs", "app.json"),
          JSON.stringify({
            agent: { shell_sandbox_confine_reads: false, shell_sandbox_read_paths: [outside] },
          }),
        );
        const r = await shell(`cat ${outside}/secret.txt`, { root: project });
        expect(String(r.stdout)).not.toContain(SECRET);
        expect(r.stderr).toMatch(/shell_sandbox_confine_reads/);
        // The same file from the user's own --config is honoured.
        const user = path.join(outside, "user.json");
        writeFileSync(user, JSON.stringify({ agent: { shell_sandbox_read_paths: [outside] } }));
        const allowed = await shell(`cat ${outside}/secret.txt`, { args: ["--config", user] });
        expect(allowed).toMatchObject({ exit_code: 0, stdout: `${SECRET}\n` });
      } finally {
        rmSync(project, { recursive: true, force: true });
      }
    },
  );
});
