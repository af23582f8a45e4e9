import fs from "node:fs";
import { describe, expect, it } from "vitest";
import { effectiveSettings, SETTING_NAMES } from "../../src/config.ts";

const EXAMPLE = fs.readFileSync(new URL("../../.env.example", import.meta.url), "utf8");

/** The `NAME=value` lines of .env.example (commented out or not), in order. */
const documented = [...EXAMPLE.matchAll(/^#?([A-Z][A-Z0-9_]*)=(.*)$/gm)].map((m) => ({ name: m[1]!, value: m[2]! }));

describe(".env.example, the list of every setting", () => {
  it("lists each setting of src/config.ts once, and nothing src/config.ts does not read", () => {
    const names = documented.map((d) => d.name);
    expect(new Set(names).size).toBe(names.length);
    expect([...names].sort()).toEqual([...SETTING_NAMES].sort());
  });

  it("gives each setting its real default (empty for one that is unset by default)", () => {
    const defaults = new Map(effectiveSettings({}).map((s) => [s.name, s.value]));
    for (const { name, value } of documented) expect({ name, value }).toEqual({ name, value: defaults.get(name) });
  });

  it("says what each setting means on a comment line above it", () => {
    const lines = EXAMPLE.split("\n");
    for (const { name } of documented) {
      let i = lines.findIndex((line) => line.startsWith(`#${name}=`));
      while (i > 0 && /^#[A-Z][A-Z0-9_]*=/.test(lines[i - 1]!)) i--; // a group shares one description
      expect({ name, description: /^# \S/.test(lines[i - 1] ?? "") }).toEqual({ name, description: true });
    }
  });
});
