// biome-ignore-all lint/suspicious/noTemplateCurlyInString: bash command lines, where ${…} is bash's own syntax
import { spawn } from "node:child_process";
import { existsSync, rmSync } from "node:fs";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { commandLineParts } from "./command-rules.js";
import { removeDir, tempDir } from "./test-harness.js";

// Real bash is the oracle: every line below is run by bash in a scratch directory, and whenever bash
// ran the hidden `touch M`, the rule walker must have seen it: either as a command part of its own
// (`touch M`, which a deny rule denies and an allow rule must cover) or as an opaque part (which asks).
// A line bash does not run the substitution in proves nothing either way and is only counted.

/** The ways a command hides inside a word. */
const HIDDEN = ["`touch M`", "$(touch M)", "<(touch M)", ">(touch M)"];

/**
 * Places a substitution can sit, `X` marking it. Variables: `v` unset, `s` set, `a` an array; `n`
 * names a variable whose value is an arithmetic expression with the substitution inside.
 */
const CONTEXTS = [
  // Parameter expansions with a word operand (the shapes and their siblings).
  "ls ${v-X}",
  // Text before the expansion that is not ASCII (the parser counts offsets its own way).
  'ls "héllo ✓" ${v-X}',
  "ls ${v:-X}",
  "ls ${v=X}",
  "ls ${v:=X}",
  "ls ${PWD+X}",
  "ls ${PWD:+X}",
  "ls ${v?X} 2>/dev/null",
  "ls ${v:?X} 2>/dev/null",
  "ls ${PWD#X}",
  "ls ${PWD##X}",
  "ls ${PWD%X}",
  "ls ${PWD%%X}",
  "ls ${PWD/X/y}",
  "ls ${PWD//y/X}",
  "ls ${PWD/#y/X}",
  "ls ${PWD/%y/X}",
  "ls ${PWD^X}",
  "ls ${PWD,,X}",
  'ls "${v-X}"',
  'ls "${PWD:+X}"',
  'ls "a${v:-X}b"',
  "ls ${v-${w-X}}",
  'ls ${v-"X"}',
  "ls ${v-'X'}",
  "ls ${PWD:X}",
  "ls ${PWD:0:X}",
  "ls ${a[X]}",
  "ls ${#a[X]}",
  // Here-documents: terminated, unterminated, with tabs stripped, two in a row, quoted (literal).
  "cat <<EOF\nX\nEOF",
  "cat <<EOF\na X b\nEOF\n",
  "cat <<-EOF\n\tX\n\tEOF",
  "cat <<EOF\n${v-X}\nEOF",
  "cat <<EOF\nX",
  "cat <<EOF\nX\n",
  "cat <<EOF; ls\nX\nEOF",
  "cat <<A <<B\nx\nA\nX\nB",
  "cat <<'EOF'\nX\nEOF",
  'cat <<"EOF"\nX\nEOF',
  "cat <<\\EOF\nX\nEOF",
  // Here-strings, redirect targets, assignments, arrays.
  "cat <<< X",
  'cat <<< "X"',
  "ls > X",
  "ls 2> ${v-X}",
  "v=X ls",
  "v=${w-X} ls",
  "a=(X); ls",
  "a+=(${w-X}); ls",
  "declare v=${w-X}; ls",
  "export v=${w-X}; ls",
  "local v=X 2>/dev/null; ls",
  // Control flow, tests, patterns.
  "for i in X; do ls; done",
  "for i in ${v-X}; do ls; done",
  "case X in a) ls;; esac",
  "case a in ${v-X}) ls;; esac",
  "case a in X) ls;; esac",
  "[[ a == X ]] || ls",
  "[[ a == ${v-X} ]] || ls",
  "[[ a =~ X ]] || ls",
  "[ a = X ] || ls",
  "[ a = ${v-X} ] || ls",
  "if X; then ls; fi",
  "while ! X; do break; done; ls",
  "select i in X; do break; done </dev/null 2>/dev/null; ls",
  // Arithmetic: directly, and through a variable whose value holds the substitution.
  "echo $(( X ))",
  "echo $[ X ]",
  "(( X )); ls",
  "n='a[X]'; echo $(( n ))",
  "n='a[X]'; echo $[ n ]",
  "n='a[X]'; echo ${PWD:n}",
  "n='a[X]'; echo ${PWD:0:n}",
  "n='a[X]'; echo ${!n}",
  "n='a[X]'; echo ${!n-}",
  "n='X'; echo ${n@P}",
  "n='a[X]'; [[ $n -eq 0 ]]; ls",
  "n='a[X]'; [[ n -eq 0 ]]; ls",
  "n='a[X]'; echo ${a[n]}",
  "n='a[X]'; a[n]=1; ls",
  "n='a[X]'; printf -v \"$n\" x; ls",
  "n='a[X]'; declare -n r=\"$n\"; echo $r",
  "n='a[X]'; test -v \"$n\"; ls",
  "n='a[X]'; unset \"$n\"; ls",
  "n='a[X]'; ls ${a[@]:n}",
  "n='a[X]'; for ((i=n; i<0; i++)); do :; done; ls",
  // Brace expansion, functions, subshells, pipelines, coprocesses.
  "ls {a,X}",
  "f() { X; }; f",
  "function f { ls ${v-X}; }; f",
  "(ls ${v-X})",
  "{ ls ${v-X}; }",
  "ls | cat ${v-X}",
  "ls && ls ${v-X}",
  "coproc ls ${v-X}",
  // Wrappers and nested shells.
  "env ls ${v-X}",
  "time ls ${v-X}",
  "bash -c 'ls ${v-X}'",
  "eval 'ls ${v-X}'",
  'bash -c "cat <<EOF\nX\nEOF"',
  "command ls ${v-X}",
];

interface Outcome {
  line: string;
  ran: boolean;
  seen: boolean;
}

const scratch = tempDir("tb-rules-fuzz-");
afterAll(() => removeDir(scratch));

/** Runs `line` in bash with its marker renamed to `name`; whether the marker file appeared. */
function bashRuns(line: string, name: string): Promise<boolean> {
  const marker = path.join(scratch, name);
  return new Promise((resolve) => {
    const child = spawn("bash", ["-c", line.replaceAll("touch M", `touch ${name}`)], {
      cwd: scratch,
      stdio: "ignore",
      // A line that waits on a pipe nobody closes (`ls | cat ${v->(…)}`) is ended; its marker counts.
      timeout: 3000,
      env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: scratch },
    });
    child.on("close", () => {
      const ran = existsSync(marker);
      rmSync(marker, { force: true });
      resolve(ran);
    });
  });
}

async function seen(line: string): Promise<boolean> {
  const parts = await commandLineParts(line);
  return parts.commands.some((p) => p.opaque !== undefined || p.words[0] === "touch");
}

describe("the rule walker against bash itself", () => {
  const lines = CONTEXTS.flatMap((context) => HIDDEN.map((hidden) => context.replaceAll("X", hidden)));

  it(`sees or asks about every substitution bash runs (${lines.length} lines)`, async () => {
    const outcomes: Outcome[] = [];
    // A few bash processes at a time: each line has a marker of its own.
    for (let i = 0; i < lines.length; i += 8) {
      const batch = lines.slice(i, i + 8);
      const ran = await Promise.all(batch.map((line, j) => bashRuns(line, `M${i + j}`)));
      for (const [j, line] of batch.entries())
        outcomes.push({ line, ran: ran[j] === true, seen: await seen(line) });
    }
    const ran = outcomes.filter((o) => o.ran);
    const missed = ran.filter((o) => !o.seen).map((o) => o.line);
    expect(missed).toEqual([]);
    // The oracle did its job: most of these shapes do run the substitution.
    expect(ran.length).toBeGreaterThan(lines.length / 2);
  }, 120_000);

  it("still allows plain lines whose words are all literal", async () => {
    for (const line of [
      "ls ${v-x}",
      "ls ${PWD:+a b}",
      "cat <<EOF\nplain text, $HOME and ${v-x}\nEOF",
      "cat <<'EOF'\n`not run` $(not run)\nEOF",
      "echo '`not run`' \"\\`escaped\\`\"",
      "echo $((1 + 2))",
      'echo "héllo ✓ 𝄞" ${v-x} `echo ok`',
    ]) {
      const parts = await commandLineParts(line);
      expect(
        parts.commands.filter((p) => p.opaque).map((p) => p.opaque),
        line,
      ).toEqual([]);
    }
  });
});
