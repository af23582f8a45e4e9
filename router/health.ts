/**
 * `GET /health` (docs/api/generation.md §4; docs/architecture.md §2): 200 with the available models only when the
 * router and every subgraph answer; 503 otherwise, naming what is not ready.
 */
import type { ServerResponse } from "node:http";
import type { Gateway } from "./graph/gateway.ts";
import { runOperation, type GraphResult } from "./graph/client.ts";
import { OPERATIONS, sendJson } from "./rest/generation.ts";
import type { ReferenceRules } from "../src/generation/catalog.ts";

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

/**
 * Whether a subgraph answers its `GET /health` within two seconds (its `/graphql` serves only
 * requests the router signs; the models query below goes through it).
 * @param url the subgraph's `/graphql` URL
 */
async function subgraphReady(url: string): Promise<boolean> {
  try {
    const response = await fetch(new URL("health", new URL(".", url)), { signal: AbortSignal.timeout(2000) });
    return response.ok;
  } catch {
    return false;
  }
}

/**
 * Creates the health handler.
 * @param subgraphUrls subgraph name → `/graphql` URL
 */
export function createHealth(gateway: Gateway, subgraphUrls: Record<string, string>) {
  return async (res: ServerResponse, requestId: string): Promise<void> => {
    const [models, ...ready] = await Promise.all([
      runOperation<{ models: ModelNode[] }>(gateway, OPERATIONS.models, {}, { requestId, route: "GET /health" }).catch(
        (): GraphResult<{ models: ModelNode[] }> => ({ errors: [{ message: "gateway not ready" }] }),
      ),
      ...Object.values(subgraphUrls).map(subgraphReady),
    ]);
    const subgraphs = Object.fromEntries(Object.keys(subgraphUrls).map((name, i) => [name, ready[i] ? "ok" : "unavailable"]));
    if (models.errors?.length || !models.data?.models || ready.includes(false)) {
      return sendJson(res, 503, { status: "unavailable", subgraphs, models: [] });
    }
    sendJson(res, 200, { status: "ok", subgraphs, models: models.data.models.filter((m) => m.available).map(restModel) });
  };
}
