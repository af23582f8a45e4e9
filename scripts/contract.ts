/**
 * The contract of the graph as a product (README "Schema and contract"):
 *
 *   node --import tsx scripts/contract.ts check [--root DIR]            npm run check:contract
 *   node --import tsx scripts/contract.ts release VERSION [--root DIR]  npm run contract:release -- VERSION
 *
 * `check` prints the report of router/contract/check.ts and exits 1 when it fails; `release`
 * moves the baseline (router/contract/release.ts). `--root` names another checkout (tests).
 * Exit codes: 0 passed, 1 failed, 2 bad usage.
 */
import { pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import { checkContract, formatReport, loadContractInputs } from "../router/contract/check.ts";
import { REPOSITORY } from "../router/contract/files.ts";
import { releaseContract } from "../router/contract/release.ts";

const USAGE = "usage: contract.ts check [--root DIR] | contract.ts release VERSION [--root DIR]";

async function main(argv: string[]): Promise<number> {
  const { positionals, values } = parseArgs({ args: argv, allowPositionals: true, options: { root: { type: "string" } } });
  const root = values.root ? pathToFileURL(`${values.root.replace(/\/?$/, "/")}`) : REPOSITORY;
  const [command, version, ...extra] = positionals;
  if (command === "check" && version === undefined) {
    const report = await checkContract(loadContractInputs(root));
    console.log(formatReport(report));
    return report.ok ? 0 : 1;
  }
  if (command === "release" && version !== undefined && extra.length === 0) {
    for (const path of await releaseContract(version, root)) console.log(`wrote ${path}`);
    return 0;
  }
  console.error(USAGE);
  return 2;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error) => {
    console.error(`contract: ${error instanceof Error ? error.message : String(error)}`);
    // An unknown option or a missing value is bad usage (node:util parseArgs' ERR_PARSE_ARGS_*).
    const usage = String((error as { code?: unknown }).code ?? "").startsWith("ERR_PARSE_ARGS");
    if (usage) console.error(USAGE);
    process.exit(usage ? 2 : 1);
  },
);
