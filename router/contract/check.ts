/**
 * The contract check (`npm run check:contract`, part of `npm test`; README "Schema and
 * contract"): in one step, the GraphQL API schema, both OpenAPI documents and the project's own
 * operations against the last release.
 *
 * 1. The committed produced files (schema/supergraph.graphql, schema/api.graphql,
 *    docs/api/openapi/*.json) are what the code produces.
 * 2. Every breaking change from the release baseline (schema/released/) to what the code
 *    produces now, in the API schema or either OpenAPI document, is announced in CHANGELOG.md's
 *    Unreleased section with a migration note naming its coordinate. Dangerous changes are
 *    printed.
 * 3. Every operation of the trusted-documents manifest and of the REST shims validates against
 *    the API schema composed now.
 *
 * The baseline moves only at a release (router/contract/release.ts): comparing with the files of
 * the same commit would see nothing, since `npm run compose` rewrites them with the change.
 */
import { announcedCoordinates, normalizeCoordinate } from "./changelog.ts";
import { graphqlChanges, openApiChanges, type ContractChange, type Surface } from "./changes.ts";
import { OPENAPI_DOCUMENTS, PRODUCED, readText, RELEASED, REPOSITORY, staleFiles, type RestSurface } from "./files.ts";
import { invalidOperations, manifestOperations, shimOperations, TRUSTED_DOCUMENTS, type NamedOperation, type OperationProblem } from "./operations.ts";
import { composeSchemas } from "../compose.ts";

/** What the check compares. */
export interface ContractInputs {
  /** The release baseline: its API schema SDL, OpenAPI documents and version. */
  released: { api: string; openapi: Record<RestSurface, object>; version: string };
  /** What the code produces now. */
  current: { api: string; openapi: Record<RestSurface, object> };
  /** CHANGELOG.md's text. */
  changelog: string;
  /** The operations that must validate against `current.api`. */
  operations: NamedOperation[];
  /** Problems found while reading the operations (a manifest id that is not its document's hash). */
  operationProblems: OperationProblem[];
  /** Whether the trusted-documents manifest exists. */
  manifest: boolean;
  /** Produced files whose committed copy differs from the code's. */
  stale: string[];
}

/** What the check found. */
export interface ContractReport {
  releasedVersion: string;
  /** Every change, by surface. */
  changes: ContractChange[];
  /** Breaking changes that no Unreleased entry with a migration note names. */
  unannounced: ContractChange[];
  invalid: OperationProblem[];
  operationCount: number;
  manifest: boolean;
  stale: string[];
  /** True when nothing above fails the check. */
  ok: boolean;
}

/**
 * Reads what the check compares from a repository.
 * @param root the repository (tests pass a copy)
 * @throws Error when the baseline is missing or composition fails
 */
export function loadContractInputs(root: URL = REPOSITORY): ContractInputs {
  const need = (path: string) => {
    const text = readText(new URL(path, root));
    if (text === undefined) throw new Error(`${path} is missing (the release baseline: README "Schema and contract")`);
    return text;
  };
  const manifestText = readText(new URL(TRUSTED_DOCUMENTS, root));
  const manifest = manifestText === undefined ? { operations: [], problems: [] } : manifestOperations(manifestText);
  return {
    released: {
      api: need(RELEASED.api),
      openapi: { generation: JSON.parse(need(RELEASED.openapi.generation)), cloud: JSON.parse(need(RELEASED.openapi.cloud)) },
      version: need(RELEASED.version).trim(),
    },
    current: { api: composeSchemas(root).api, openapi: { ...OPENAPI_DOCUMENTS } },
    changelog: need("CHANGELOG.md"),
    operations: [...manifest.operations, ...shimOperations()],
    operationProblems: manifest.problems,
    manifest: manifestText !== undefined,
    stale: staleFiles(root),
  };
}

/** Runs the check over its inputs. */
export async function checkContract(inputs: ContractInputs): Promise<ContractReport> {
  const changes = [
    ...(await graphqlChanges(inputs.released.api, inputs.current.api)),
    ...openApiChanges("generation", inputs.released.openapi.generation, inputs.current.openapi.generation),
    ...openApiChanges("cloud", inputs.released.openapi.cloud, inputs.current.openapi.cloud),
  ];
  const announced = announcedCoordinates(inputs.changelog);
  const unannounced = changes.filter((c) => c.level === "breaking" && ![c.coordinate, ...c.aliases].some((name) => announced.has(normalizeCoordinate(name))));
  const invalid = [...inputs.operationProblems, ...invalidOperations(inputs.current.api, inputs.operations)];
  return {
    releasedVersion: inputs.released.version,
    changes,
    unannounced,
    invalid,
    operationCount: inputs.operations.length,
    manifest: inputs.manifest,
    stale: inputs.stale,
    ok: unannounced.length === 0 && invalid.length === 0 && inputs.stale.length === 0,
  };
}

const SURFACES: Record<Surface, string> = {
  graphql: `GraphQL API schema (${PRODUCED.api})`,
  generation: "generation REST (/api/v1, GET /api/v1/openapi.json)",
  cloud: "cloud REST (/openapi/v1, GET /openapi/v1/openapi.json)",
};

/**
 * The report as the check prints it: per surface the breaking changes (each marked as announced
 * in CHANGELOG.md or not) and the dangerous ones, then the operations, then what fails.
 */
export function formatReport(report: ContractReport): string {
  const lines = [`Contract check against release ${report.releasedVersion} (schema/released/)`];
  const unannounced = new Set(report.unannounced);
  for (const [surface, title] of Object.entries(SURFACES) as [Surface, string][]) {
    const mine = report.changes.filter((c) => c.surface === surface);
    const count = (level: string) => mine.filter((c) => c.level === level).length;
    lines.push("", `${title}: ${count("breaking")} breaking, ${count("dangerous")} dangerous, ${count("safe")} safe`);
    for (const c of mine.filter((c) => c.level === "breaking")) {
      lines.push(`  ${unannounced.has(c) ? "BREAKING, NOT IN CHANGELOG" : "breaking, in CHANGELOG"}  ${c.coordinate}: ${c.messages.join("; ")}`);
    }
    for (const c of mine.filter((c) => c.level === "dangerous")) lines.push(`  dangerous  ${c.coordinate}: ${c.messages.join("; ")}`);
  }
  lines.push(
    "",
    `Operations: ${report.operationCount} (the REST shims'${report.manifest ? `, ${TRUSTED_DOCUMENTS}` : `; ${TRUSTED_DOCUMENTS} not present`}), ${report.invalid.length} invalid`,
  );
  for (const problem of report.invalid) lines.push(`  INVALID  ${problem.source}: ${problem.errors.join("; ")}`);
  lines.push("");
  for (const path of report.stale) lines.push(`STALE  ${path} is not what the code produces: run \`npm run compose\``);
  if (report.unannounced.length) {
    lines.push(
      `FAIL  ${report.unannounced.length} breaking change(s) not in CHANGELOG.md; name each in an Unreleased entry with a *Migration*: note: ` +
        report.unannounced.map((c) => `\`${c.coordinate}\``).join(", "),
    );
  }
  if (report.invalid.length) lines.push(`FAIL  ${report.invalid.length} operation(s) no longer validate against the API schema`);
  lines.push(report.ok ? "Contract check passed." : "Contract check failed.");
  return lines.join("\n");
}
