/**
 * The OpenAPI 3.1 documents of both REST surfaces and their handlers (`GET /api/v1/openapi.json`,
 * `GET /openapi/v1/openapi.json`; issue 3 item 10). No key needed.
 */
import { serveDocument } from "./common.ts";
import { cloudOpenApi } from "./cloud.ts";
import { generationOpenApi } from "./generation.ts";

export { cloudOpenApi, generationOpenApi };

/** Answers the generation document. */
export const serveGenerationOpenApi = serveDocument(generationOpenApi);
/** Answers the cloud document. */
export const serveCloudOpenApi = serveDocument(cloudOpenApi);
