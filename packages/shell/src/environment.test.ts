import { describe, expect, it } from "vitest";
import { commandEnvironment, MARK_VARIABLE } from "./environment.js";

describe("commandEnvironment", () => {
  it("scrubs credentials, applies agent.shell_env and stays non-interactive", () => {
    const env = commandEnvironment(
      {
        PATH: "/bin",
        TOOLBELT_TOKEN: "t",
        AWS_SECRET_ACCESS_KEY: "a",
        CI_CACHE_KEY: "c",
        [MARK_VARIABLE]: "outer",
      },
      { tmpdir: "/tmp/x", mark: "inner", tty: false, policy: { allow: ["CI_CACHE_KEY", "TOOLBELT_TOKEN"] } },
    );
    expect(env.PATH).toBe("/bin");
    expect(env.TOOLBELT_TOKEN).toBeUndefined();
    expect(env.AWS_SECRET_ACCESS_KEY).toBeUndefined();
    expect(env.CI_CACHE_KEY).toBe("c");
    expect(env[MARK_VARIABLE]).toBe("outer:inner");
    expect(env.PAGER).toBe("cat");
    expect(env.TMPDIR).toBe("/tmp/x");
  });
});
