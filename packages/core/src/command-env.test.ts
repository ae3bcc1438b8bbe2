import { describe, expect, it } from "vitest";
import { commandEnvVerdict, envNameMatches, scrubbedNames, scrubCommandEnv } from "./command-env.js";

const host = {
  PATH: "/usr/bin:/bin",
  HOME: "/home/u",
  LANG: "C.UTF-8",
  LC_ALL: "C.UTF-8",
  SSH_AUTH_SOCK: "/tmp/agent.sock",
  TOOLBELT_TOKEN: "t0ken",
  TOOLBELT_TRUST: "1",
  TOOLBELT_SHELL_MARK: "abc.1",
  AWS_SECRET_ACCESS_KEY: "aws",
  AWS_REGION: "eu-west-1",
  GITHUB_TOKEN: "gh",
  NPM_TOKEN: "npm",
  AZURE_CLIENT_SECRET: "az",
  GOOGLE_APPLICATION_CREDENTIALS: "/k.json",
  DB_PASSWORD: "pw",
  OPENAI_API_KEY: "sk",
  NODE_ENV: "test",
  CI: "true",
};

describe("scrubCommandEnv", () => {
  it("removes credentials and toolbelt's own variables, keeps what ordinary work needs", () => {
    const env = scrubCommandEnv(host);
    expect(Object.keys(env).sort()).toEqual(
      [
        "CI",
        "HOME",
        "LANG",
        "LC_ALL",
        "NODE_ENV",
        "PATH",
        "SSH_AUTH_SOCK",
        "TOOLBELT_SHELL_MARK",
        // git's bare-repository pin (pinGitDiscovery).
        "GIT_CONFIG_COUNT",
        "GIT_CONFIG_KEY_0",
        "GIT_CONFIG_VALUE_0",
      ].sort(),
    );
  });

  it("removes a variable whose value holds a credential, and a proxy's credentials only", () => {
    const env = scrubCommandEnv({
      REDIS_URL: "redis://:pw1@cache:6379",
      WEIRD: "x -Dp=http://u:pw2@h y",
      SQL: "Server=db;Password=pw3;",
      HTTPS_PROXY: "http://u:pw4@proxy:3128",
      http_proxy: "http://:pw5@proxy:3128/",
      SITE: "https://user@example.com/a:b@c",
      DOCS: "https://example.com/?a=b",
    });
    expect(env).toMatchObject({
      HTTPS_PROXY: "http://proxy:3128",
      http_proxy: "http://proxy:3128/",
      SITE: "https://user@example.com/a:b@c",
      DOCS: "https://example.com/?a=b",
    });
    expect(JSON.stringify(env)).not.toMatch(/pw\d/);
  });

  it("keeps the host's git setting pairs without credentials, renumbered, before its own pin", () => {
    const env = scrubCommandEnv({
      GIT_CONFIG_COUNT: "3",
      GIT_CONFIG_KEY_0: "http.https://example.com/.extraheader",
      GIT_CONFIG_VALUE_0: "AUTHORIZATION: basic c2VjcmV0",
      GIT_CONFIG_KEY_1: "safe.directory",
      GIT_CONFIG_VALUE_1: "*",
      GIT_CONFIG_KEY_2: "url.https://u:pw@example.com/.insteadOf",
      GIT_CONFIG_VALUE_2: "https://example.com/",
    });
    expect(env).toEqual({
      GIT_CONFIG_COUNT: "2",
      GIT_CONFIG_KEY_0: "safe.directory",
      GIT_CONFIG_VALUE_0: "*",
      GIT_CONFIG_KEY_1: "safe.bareRepository",
      GIT_CONFIG_VALUE_1: "explicit",
    });
  });

  it("lets an allowed name through and removes a denied one", () => {
    const env = scrubCommandEnv(host, { allow: ["AWS_REGION", "NPM_*"], deny: ["NODE_ENV"] });
    expect(env.AWS_REGION).toBe("eu-west-1");
    expect(env.NPM_TOKEN).toBe("npm");
    expect(env.NODE_ENV).toBeUndefined();
    expect(env.AWS_SECRET_ACCESS_KEY).toBeUndefined();
  });

  it("never passes the HTTP token, even when allow says * ", () => {
    const env = scrubCommandEnv(host, { allow: ["*"] });
    expect(env.TOOLBELT_TOKEN).toBeUndefined();
    expect(env.AWS_SECRET_ACCESS_KEY).toBe("aws");
    expect(commandEnvVerdict("toolbelt_token", { allow: ["toolbelt_token"] })).toBe("never");
  });

  it("lists removed names without values", () => {
    expect(scrubbedNames({ PATH: "/bin", GITHUB_TOKEN: "x" })).toEqual(["GITHUB_TOKEN"]);
  });

  it("matches globs case-insensitively and literally otherwise", () => {
    expect(envNameMatches("my_api_key", ["*_KEY"])).toBe(true);
    expect(envNameMatches("A.B", ["A*B"])).toBe(true);
    expect(envNameMatches("AXB", ["A.B"])).toBe(false);
  });
});
