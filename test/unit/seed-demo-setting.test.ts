/**
 * SEED_DEMO (README "Demo data"; issue 20 finding 4): whether `start` seeds the demo catalog and a
 * demo key. Unset, on unless NODE_ENV is production; 1 or 0 decides in every environment.
 * test/e2e/demo-data.test.ts starts real processes with it.
 */
import { describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config.ts";

describe("SEED_DEMO", () => {
  it.each([
    [{}, true],
    [{ NODE_ENV: "development" }, true],
    [{ NODE_ENV: "development", SEED_DEMO: "0" }, false],
    [{ NODE_ENV: "test", SEED_DEMO: "false" }, false],
    [{ NODE_ENV: "production" }, false],
    [{ NODE_ENV: "production", SEED_DEMO: "" }, false],
    [{ NODE_ENV: "production", SEED_DEMO: "1" }, true],
    [{ NODE_ENV: "production", SEED_DEMO: "true" }, true],
  ])("with %j seeds the demo data: %s", (env, seeds) => {
    expect(loadConfig(env).seedDemo).toBe(seeds);
  });

  it("refuses another value, naming the setting", () => {
    expect(() => loadConfig({ SEED_DEMO: "yes" })).toThrow("SEED_DEMO: must be 1 or 0 (true or false), or unset");
  });
});
