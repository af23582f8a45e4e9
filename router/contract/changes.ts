/**
 * The changes between a released contract and the current one, classified by well-kept diff
 * tools and named by coordinates that CHANGELOG.md can quote (router/contract/changelog.ts):
 *
 * - GraphQL: @graphql-inspector/core `diff` over the two API schemas. Its BREAKING changes break a
 *   client (a removed field, a type changed, an argument or input field made required); DANGEROUS
 *   ones may change what a client sees (a default added, an enum value or interface added);
 *   coordinates are the inspector's paths: `Task.createdAt`, `Query.tasks.first` (also written
 *   `Query.tasks(first:)`), `TaskStatus.QUEUED`, `Task`.
 * - REST: api-smart-diff `apiCompare` over the two OpenAPI 3.1 documents of a surface (it resolves
 *   `$ref`s and knows request from response: a property removed from an answer or added as
 *   required to a body is breaking). Its `unclassified` and `deprecated` changes are reported as
 *   dangerous. Coordinates: `METHOD /path`, `METHOD /path request FIELD`, `METHOD /path response
 *   STATUS [FIELD]`, `METHOD /path response STATUS header NAME`, `METHOD /path query|header|path
 *   NAME`; FIELD is a dotted path into the JSON body, `[]` for array items
 *   (`GET /api/v1/usage response 200 data.tasks[].status`).
 */
import { buildSchema } from "graphql";
import { CriticalityLevel, diff as graphqlDiff, type Change } from "@graphql-inspector/core";
import { apiCompare, type Diff } from "api-smart-diff";
import type { RestSurface } from "./files.ts";

/** Where a change is: the API schema or one REST surface. */
export type Surface = "graphql" | RestSurface;

/** How a change affects existing clients. */
export type Level = "breaking" | "dangerous" | "safe";

/** One change of the contract. */
export interface ContractChange {
  surface: Surface;
  level: Level;
  /** The coordinate, as the report prints it and CHANGELOG.md names it. */
  coordinate: string;
  /** Other spellings CHANGELOG.md may use for the same coordinate. */
  aliases: string[];
  /** What changed, in the diff tool's words (several when one coordinate changed in several ways). */
  messages: string[];
}

const LEVELS: Record<CriticalityLevel, Level> = {
  [CriticalityLevel.Breaking]: "breaking",
  [CriticalityLevel.Dangerous]: "dangerous",
  [CriticalityLevel.NonBreaking]: "safe",
};

/**
 * The changes between two API schemas.
 * @param released the SDL of the release baseline
 * @param current the SDL composed now
 */
export async function graphqlChanges(released: string, current: string): Promise<ContractChange[]> {
  const changes = await graphqlDiff(buildSchema(released), buildSchema(current));
  return merge(
    changes.map((change: Change) => {
      const coordinate = change.path ?? change.type;
      const argument = /^(\w+\.\w+)\.(\w+)$/.exec(coordinate);
      const isArgument = change.type.startsWith("FIELD_ARGUMENT_");
      return {
        surface: "graphql",
        level: LEVELS[change.criticality.level],
        coordinate,
        aliases: isArgument && argument ? [`${argument[1]}(${argument[2]}:)`] : [],
        messages: [change.message],
      };
    }),
  );
}

/** api-smart-diff's classes of change. */
const REST_LEVELS: Record<Diff["type"], Level> = {
  breaking: "breaking",
  unclassified: "dangerous",
  deprecated: "dangerous",
  "non-breaking": "safe",
  annotation: "safe",
};

/**
 * The changes between two OpenAPI documents of one surface. Only what is reachable from `paths`
 * (and top-level keys other than `components`) counts: a component matters where an operation
 * uses it, and the tool reports it there.
 * @param surface which REST surface
 * @param released the document of the release baseline
 * @param current the document the router serves now
 */
export function openApiChanges(surface: RestSurface, released: object, current: object): ContractChange[] {
  // apiCompare writes into the documents it is given (it resolves `$ref`s in place): give it copies.
  const { diffs } = apiCompare(structuredClone(released), structuredClone(current));
  return merge(
    diffs
      .filter((d) => d.path[0] !== "components" && d.path[0] !== "info")
      .map((d) => ({
        surface,
        level: REST_LEVELS[d.type],
        coordinate: restCoordinate(d, released, current),
        aliases: [],
        messages: [d.description ?? `${d.action} ${d.path.join("/")}`],
      })),
  );
}

/** Changes at the same coordinate and level as one, their messages together. */
function merge(changes: ContractChange[]): ContractChange[] {
  const byKey = new Map<string, ContractChange>();
  for (const change of changes) {
    const key = `${change.surface}\0${change.level}\0${change.coordinate}`;
    const seen = byKey.get(key);
    if (!seen) byKey.set(key, { ...change, messages: [...change.messages] });
    else for (const message of change.messages) if (!seen.messages.includes(message)) seen.messages.push(message);
  }
  return [...byKey.values()];
}

/** A node of a document with a local `$ref` followed (`#/components/...`). */
function resolve(document: object, node: unknown): unknown {
  let current = node;
  for (let hops = 0; hops < 20 && isRecord(current) && typeof current.$ref === "string" && current.$ref.startsWith("#/"); hops++) {
    current = current.$ref
      .slice(2)
      .split("/")
      .map((part) => part.replace(/~1/g, "/").replace(/~0/g, "~"))
      .reduce<unknown>((at, key) => (isRecord(at) ? at[key] : undefined), document);
  }
  return current;
}

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null;

/**
 * The coordinate of an api-smart-diff change (see the module comment for the forms).
 * @param d the change; its path walks the document with `$ref`s resolved
 * @param released the document compared from, and `current` the one compared to: a parameter's
 *   name is looked up in them (a path gives only its index)
 * @returns the coordinate, `POST /api/v1/video/generations request seconds`
 */
function restCoordinate(d: Diff, released: object, current: object): string {
  const path = d.path.map(String);
  if (path[0] !== "paths") return path.join(".");
  const [, route, method, part, ...rest] = path;
  if (!method) return route!;
  if (method === "parameters" || method === "servers" || method === "summary" || method === "description") {
    return `${route} ${method}`;
  }
  const operation = `${method.toUpperCase()} ${route}`;
  if (part === "parameters") {
    // A whole parameter added is indexed in the current document; every other change in the released one.
    const wholeAdded = rest.length === 1 && d.action === "add";
    const document = wholeAdded ? current : released;
    const node = resolve(document, (document as { paths?: Record<string, Record<string, unknown>> }).paths?.[route!]?.[method]);
    const parameters = isRecord(node) ? resolve(document, node.parameters) : undefined;
    const parameter = resolve(document, Array.isArray(parameters) ? parameters[Number(rest[0])] : undefined);
    if (isRecord(parameter) && typeof parameter.name === "string") return `${operation} ${parameter.in} ${parameter.name}`;
    return `${operation} parameters`;
  }
  if (part === "requestBody") {
    const field = schemaField(rest, d);
    return field ? `${operation} request ${field}` : `${operation} request`;
  }
  if (part === "responses") {
    const [status, section, ...inner] = rest;
    if (!status) return `${operation} responses`;
    if (section === "headers" && inner[0]) return `${operation} response ${status} header ${inner[0]}`;
    const field = section === "content" ? schemaField(inner, d) : "";
    return field ? `${operation} response ${status} ${field}` : `${operation} response ${status}`;
  }
  return operation;
}

/**
 * The JSON field a change under `content/<type>/schema/...` is about: `properties/x` steps into
 * x, `items` into `[]`, `required/<i>` names the property that became (or stopped being)
 * required; any other keyword (`enum`, `type`, ...) is a change of the field reached so far.
 * @param path the path after `requestBody` or after the status's `content`
 * @returns a dotted path, "" for the body itself
 */
function schemaField(path: string[], d: Diff): string {
  const at = path.indexOf("schema");
  if (at < 0) return "";
  let field = "";
  const steps = path.slice(at + 1);
  for (let i = 0; i < steps.length; i++) {
    const step = steps[i]!;
    if (step === "properties" && steps[i + 1] !== undefined) field = join(field, steps[++i]!);
    else if (step === "items") field += "[]";
    else if ((step === "allOf" || step === "oneOf" || step === "anyOf") && steps[i + 1] !== undefined) i++;
    else if (step === "required") {
      const name = d.action === "add" ? d.after : d.before;
      if (typeof name === "string") field = join(field, name);
      break;
    } else break;
  }
  return field;
}

const join = (field: string, name: string) => (field ? `${field}.${name}` : name);
