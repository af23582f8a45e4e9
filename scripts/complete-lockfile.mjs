#!/usr/bin/env node
/**
 * Completes package-lock.json for `npm ci`.
 *
 * The registry this project installs from serves only this platform's builds of packages with
 * per-platform optional dependencies (rollup's @rollup/rollup-<os>-<cpu>[-<libc>]), so the lock
 * npm writes lists them in `optionalDependencies` but has no entry for the others, and `npm ci`
 * refuses such a lock as out of sync. This adds an entry for each missing optional package with
 * the os/cpu/libc its name says, so npm ci skips it here without fetching it.
 * Run after changing dependencies: `npm run lock`.
 */
import fs from "node:fs";

const file = new URL("../package-lock.json", import.meta.url);
const lock = JSON.parse(fs.readFileSync(file, "utf8"));
const packages = lock.packages;
const OS = {
  android: "android",
  darwin: "darwin",
  freebsd: "freebsd",
  linux: "linux",
  openbsd: "openbsd",
  openharmony: "openharmony",
  win32: "win32",
  netbsd: "netbsd",
  sunos: "sunos",
  aix: "aix",
};

function platformOf(name) {
  const base = name.split("/").pop();
  const parts = base.split("-");
  const osIndex = parts.findIndex((p) => p in OS);
  if (osIndex < 0) return null;
  const os = OS[parts[osIndex]];
  let cpu = parts[osIndex + 1];
  if (
    cpu === "arm" ||
    cpu === "arm64" ||
    cpu === "x64" ||
    cpu === "ia32" ||
    cpu === "loong64" ||
    cpu === "ppc64" ||
    cpu === "riscv64" ||
    cpu === "s390x" ||
    cpu === "mips64el"
  ) {
    /* known cpu */
  } else if (cpu === "universal") cpu = null;
  const rest = parts.slice(osIndex + 2).join("-");
  const libc = /musl/.test(rest) ? "musl" : /gnu/.test(rest) ? "glibc" : null;
  return { os, cpu, libc };
}

let added = 0;
for (const [path, entry] of Object.entries(packages)) {
  for (const [dep, version] of Object.entries(entry.optionalDependencies ?? {})) {
    const location = `${path ? `${path}/` : ""}node_modules/${dep}`;
    const hoisted = `node_modules/${dep}`;
    if (packages[location] || packages[hoisted]) continue;
    const platform = platformOf(dep);
    if (!platform) continue;
    packages[hoisted] = {
      version,
      ...(entry.dev ? { dev: true } : {}),
      optional: true,
      os: [platform.os],
      ...(platform.cpu ? { cpu: [platform.cpu] } : {}),
      ...(platform.libc ? { libc: [platform.libc] } : {}),
    };
    added++;
  }
}
lock.packages = Object.fromEntries(Object.entries(packages).sort(([a], [b]) => (a === "" ? -1 : b === "" ? 1 : a.localeCompare(b))));
fs.writeFileSync(file, `${JSON.stringify(lock, null, 2)}\n`);
console.log(`package-lock.json: added ${added} platform entries`);
