/**
 * A release of the contract (`npm run contract:release -- VERSION`; README "Schema and
 * contract"): once the contract check passes, the current API schema and OpenAPI documents
 * become the baseline under schema/released/ with the version, and CHANGELOG.md's Unreleased
 * entries move under `## [VERSION] - <today>`. From then on the check compares with this release.
 */
import fs from "node:fs";
import { releaseChangelog } from "./changelog.ts";
import { checkContract, formatReport, loadContractInputs } from "./check.ts";
import { openApiText, PRODUCED, RELEASED, REPOSITORY } from "./files.ts";

/**
 * Moves the baseline to what the repository holds now.
 * @param version the release's version, semver (`0.2.0`)
 * @param root the repository
 * @param today the release day, `YYYY-MM-DD` (default: today in UTC)
 * @returns the paths written
 * @throws Error when the version is not semver or the contract check fails (with its report)
 */
export async function releaseContract(version: string, root: URL = REPOSITORY, today = new Date().toISOString().slice(0, 10)): Promise<string[]> {
  if (!/^\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?$/.test(version)) throw new Error(`version must be semver (0.2.0), not ${JSON.stringify(version)}`);
  const inputs = loadContractInputs(root);
  const report = await checkContract(inputs);
  if (!report.ok) throw new Error(`the contract check fails; fix it before releasing\n${formatReport(report)}`);
  const write = (path: string, text: string) => fs.writeFileSync(new URL(path, root), text);
  fs.mkdirSync(new URL("schema/released/", root), { recursive: true });
  write(RELEASED.api, fs.readFileSync(new URL(PRODUCED.api, root), "utf8"));
  write(RELEASED.openapi.generation, openApiText(inputs.current.openapi.generation));
  write(RELEASED.openapi.cloud, openApiText(inputs.current.openapi.cloud));
  write(RELEASED.version, `${version}\n`);
  write("CHANGELOG.md", releaseChangelog(inputs.changelog, version, today));
  return [RELEASED.api, RELEASED.openapi.generation, RELEASED.openapi.cloud, RELEASED.version, "CHANGELOG.md"];
}
