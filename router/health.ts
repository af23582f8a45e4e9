/**
 * `GET /health` (docs/api/generation.md §4; docs/architecture.md §2): 200 with the available models only when the
 * router and every subgraph answer; 503 otherwise, naming what is not ready. Also the router's
 * subgraph readiness checks (`/readyz`), whose report `/health` reads.
 */
import type { ServerResponse } from "node:http";
import type { Logger } from "pino";
import type { Gateway } from "./graph/gateway.ts";
import { runOperation, type GraphResult } from "./graph/client.ts";
import { OPERATIONS, sendJson } from "./rest/generation.ts";
import type { ReferenceRules } from "../src/generation/catalog.ts";
import { CHECK_TIMEOUT_MS, CheckFailure, reasonOf, type Readiness, type ReadinessCheck } from "../src/observability/readiness.ts";

/** A model as OPERATIONS.models selects it. */
interface ModelNode {
  id: string;
  name: string;
  kind: string;
  sizes: string[];
  resolutions: string[];
  durations: { resolution: string; seconds: number[] }[];
  defaultSeconds: number | null;
  maxCount: number;
  /** The same fields as the catalog's rules (the `ModelReferences` type of the schema). */
  references: ReferenceRules;
  available: boolean;
}

/** The REST shape of a model in `/health` (docs/architecture.md §8). */
function restModel(m: ModelNode) {
  return {
    model_id: m.id,
    model_name: m.name,
    kind: m.kind.toLowerCase(),
    sizes: m.sizes,
    resolutions: m.resolutions,
    durations: Object.fromEntries(m.durations.map((d) => [d.resolution, d.seconds])),
    default_seconds: m.defaultSeconds,
    max_count: m.maxCount,
    references: {
      kinds: m.references.kinds,
      frames: m.references.frames,
      max_images: m.references.maxImages,
      max_audios: m.references.maxAudios,
      max_videos: m.references.maxVideos,
      max_total: m.references.maxTotal,
      audio_needs_image_or_video: m.references.audioNeedsVisual,
    },
  };
}

/** The name of a subgraph's check in the readiness report. */
export const subgraphCheckName = (name: string) => `subgraph:${name}`;

/**
 * The router's readiness checks of its subgraphs (docs/architecture.md §2.9): one per subgraph,
 * passing when it answers its unauthenticated `GET /health` with a 2xx within the check timeout
 * (its `/graphql` serves only requests the router signs); a subgraph running in this process
 * passes without a request. This probe is where the router learns that a subgraph stopped or came
 * back: each change is logged once at warn (`subgraph unavailable`, `subgraph available again`),
 * so an outage is one line besides the 503 request lines it causes.
 * @param subgraphUrls subgraph name → `/graphql` URL
 * @param inProcess names of the subgraphs reached in-process
 * @param logger where the transitions are logged
 */
export function subgraphChecks(subgraphUrls: Record<string, string>, inProcess: readonly string[], logger: Logger): ReadinessCheck[] {
  return Object.entries(subgraphUrls).map(([name, url]) => {
    const healthUrl = new URL("health", new URL(".", url));
    let up: boolean | undefined; // unknown until the first probe
    const record = (ok: boolean, reason?: string) => {
      if (ok && up === false) logger.warn({ subgraph: name, url: healthUrl.href }, "subgraph available again");
      if (!ok && up !== false) logger.warn({ subgraph: name, url: healthUrl.href, reason }, "subgraph unavailable");
      up = ok;
    };
    return {
      name: subgraphCheckName(name),
      async run() {
        if (inProcess.includes(name)) return;
        try {
          const response = await fetch(healthUrl, { signal: AbortSignal.timeout(CHECK_TIMEOUT_MS) });
          await response.body?.cancel().catch(() => undefined);
          if (!response.ok) throw new CheckFailure(`HTTP ${response.status}`);
        } catch (error) {
          record(false, reasonOf(error));
          throw error;
        }
        record(true);
      },
    };
  });
}

/**
 * Creates the health handler.
 * @param readiness the router's readiness, holding one {@link subgraphChecks} entry per subgraph
 * @param subgraphNames the subgraphs `/health` lists
 */
export function createHealth(gateway: Gateway, readiness: Readiness, subgraphNames: readonly string[]) {
  return async (res: ServerResponse, requestId: string): Promise<void> => {
    const [models, report] = await Promise.all([
      runOperation<{ models: ModelNode[] }>(gateway, OPERATIONS.models, {}, { requestId, route: "GET /health" }).catch(
        (): GraphResult<{ models: ModelNode[] }> => ({ errors: [{ message: "gateway not ready" }] }),
      ),
      readiness.report(),
    ]);
    const ready = subgraphNames.map((name) => report.checks[subgraphCheckName(name)]?.status === "ok");
    const subgraphs = Object.fromEntries(subgraphNames.map((name, i) => [name, ready[i] ? "ok" : "unavailable"]));
    if (models.errors?.length || !models.data?.models || ready.includes(false)) {
      return sendJson(res, 503, { status: "unavailable", subgraphs, models: [] });
    }
    sendJson(res, 200, { status: "ok", subgraphs, models: models.data.models.filter((m) => m.available).map(restModel) });
  };
}
