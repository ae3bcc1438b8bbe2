import { describe, expect, it } from "vitest";
import { parseFast } from "./fast-args.js";

const cwd = "/work/here";

describe("parseFast", () => {
  it("reads a plain run line the way yargs' handler receives it", () => {
    expect(
      parseFast(["run", "read_file", "--input", '{"path":"a"}', "--allow", "shell", "--no-trust"], cwd),
    ).toEqual({
      command: "run",
      args: {
        root: cwd,
        tool: "read_file",
        input: '{"path":"a"}',
        allow: ["shell"],
        trust: false,
        format: "json",
        failOnCommandError: true,
      },
    });
  });

  it("takes --flag=value, repeated --allow, camel-cases dashed flags and keeps defaults", () => {
    expect(
      parseFast(["exec", "--root=/r", "--allow", "a", "--allow=b", "--events", "--no-fail-on-error"], cwd),
    ).toEqual({
      command: "exec",
      args: { root: "/r", allow: ["a", "b"], events: true, failOnError: false, failOnCommandError: true },
    });
    expect(parseFast(["tools", "--format", "openai", "--profile", "mewbo"], cwd)?.args).toEqual({
      root: cwd,
      format: "openai",
      profile: "mewbo",
    });
    expect(parseFast(["run", "shell", "--input-file", "in.json"], cwd)?.args.inputFile).toBe("in.json");
    expect(parseFast(["run", "read_file", "--input=-"], cwd)?.args.input).toBe("-");
  });

  it.each([
    [["run"]],
    [["run", "a", "b"]],
    [["run", "read_file", "--help"]],
    [["run", "read_file", "-h"]],
    [["run", "read_file", "--bogus"]],
    [["run", "read_file", "--input"]],
    [["run", "read_file", "--input", "-x"]],
    [["run", "read_file", "--input", "a", "--input", "b"]],
    [["run", "read_file", "--format", "yaml"]],
    [["run", "--allow", "shell", "shell"]],
    [["run", "read_file", "--trust", "false"]],
    [["run", "read_file", "--trust=maybe"]],
    [["run", "read_file", "--", "x"]],
    [["run", "read_file", "--inputFile", "x"]],
    [["exec", "extra"]],
    [["tools", "--format", "yaml"]],
    [["serve", "--mcp"]],
    [["doctor"]],
    [["--version"]],
    [[]],
  ])("leaves %j to yargs", (argv) => {
    expect(parseFast(argv, cwd)).toBeUndefined();
  });
});
