/**
 * The version of this build: `version` of package.json (`switchyard --version`,
 * `switchyard_build_info`). Read once at import; package.json ships with every install.
 */
import fs from "node:fs";

/** This build's version, for example `0.1.0`. */
export const VERSION: string = JSON.parse(fs.readFileSync(new URL("../package.json", import.meta.url), "utf8")).version;
