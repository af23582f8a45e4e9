/**
 * A fake Gemini API for Veo (channel type `gemini-veo`): `POST
 * /v1beta/models/{model}:predictLongRunning`, the operation `GET /v1beta/models/{model}/operations/{id}`,
 * the file download `GET /v1beta/files/{id}:download?alt=media` (behind the key, as Google's), and
 * `GET /v1beta/models`. Every call needs `x-goog-api-key`; Google's error body `{"error": {code,
 * message, status, details}}`: a bad key is 400 `INVALID_ARGUMENT` "API key not valid", a rate
 * limit 429 `RESOURCE_EXHAUSTED` with a `google.rpc.RetryInfo` detail and no `Retry-After`
 * header, 500 `INTERNAL`. `settle(…, "running")` leaves the operation not done (Veo has no other
 * open state).
 */
import { sendJson, startFakeServer, type FakeProvider, fakeProviderOf } from "./base.ts";

const error = (code: number, status: string, message: string, details: unknown[] = []) => ({ error: { code, message, status, details } });
const exhausted = (seconds: number) =>
  error(429, "RESOURCE_EXHAUSTED", "Resource has been exhausted (e.g. check quota).", [
    { "@type": "type.googleapis.com/google.rpc.RetryInfo", retryDelay: `${seconds}s` },
  ]);

/** Starts the fake. */
export async function startFakeVeo(): Promise<FakeProvider> {
  const apiKey = `AIza${Math.random().toString(36).slice(2, 14)}Xy`;
  const server = await startFakeServer({
    handle(req, res, body, ctx) {
      const path = (req.url ?? "/").split("?")[0]!;
      if (req.headers["x-goog-api-key"] !== apiKey) {
        sendJson(
          res,
          400,
          error(400, "INVALID_ARGUMENT", "API key not valid. Please pass a valid API key.", [
            { "@type": "type.googleapis.com/google.rpc.ErrorInfo", reason: "API_KEY_INVALID", domain: "googleapis.com" },
          ]),
        );
        return true;
      }
      const create = /^\/v1beta\/models\/([\w.-]+):predictLongRunning$/.exec(path);
      if (req.method === "POST" && create) {
        const next = ctx.takeNext();
        if (next.kind === "rate_limit") {
          sendJson(res, 429, exhausted(next.retryAfterSeconds));
          return true;
        }
        if (next.kind === "server_error") {
          sendJson(res, next.status, error(500, "INTERNAL", "An internal error has occurred."));
          return true;
        }
        if (typeof body?.instances?.[0]?.prompt !== "string") {
          sendJson(res, 400, error(400, "INVALID_ARGUMENT", "* PredictLongRunningRequest.instances[0].prompt: required"));
          return true;
        }
        const name = `models/${create[1]}/operations/${ctx.newId().slice(-12)}`;
        if (next.kind !== "hang") ctx.tasks.set(name, { id: name, reference: null, state: "running", kind: "video", body });
        if (next.kind === "hang" || next.kind === "accept_silently") {
          ctx.hold(res);
          return true;
        }
        sendJson(res, 200, { name });
        return true;
      }
      if (req.method === "GET" && path === "/v1beta/models") {
        sendJson(res, 200, { models: [{ name: "models/veo-3.1-generate-preview", supportedGenerationMethods: ["predictLongRunning"] }] });
        return true;
      }
      if (req.method === "GET" && /^\/v1beta\/models\/[\w.-]+\/operations\/\w+$/.test(path)) {
        if (ctx.pollRetryAfter !== null) {
          sendJson(res, 429, exhausted(ctx.pollRetryAfter));
          return true;
        }
        const name = path.slice("/v1beta/".length);
        const task = ctx.tasks.get(name);
        if (!task) {
          sendJson(res, 404, error(404, "NOT_FOUND", `Operation ${name} not found.`));
          return true;
        }
        const file = name.split("/").at(-1);
        const answers: Record<string, unknown> = {
          running: { name },
          succeeded: {
            name,
            done: true,
            response: {
              "@type": "type.googleapis.com/google.ai.generativelanguage.v1beta.PredictLongRunningResponse",
              generateVideoResponse: { generatedSamples: [{ video: { uri: `${ctx.url}/v1beta/files/${file}:download?alt=media` } }] },
            },
          },
          failed: { name, done: true, error: { code: 3, message: task.error } },
          filtered: {
            name,
            done: true,
            response: { generateVideoResponse: { raiMediaFilteredCount: 1, raiMediaFilteredReasons: ["The video was blocked by the safety filters."] } },
          },
        };
        sendJson(res, 200, answers[task.state]);
        return true;
      }
      if (req.method === "GET" && /^\/v1beta\/files\/\w+:download$/.test(path)) {
        res.writeHead(200, { "content-type": "video/mp4", "content-length": ctx.content.length });
        res.end(ctx.content);
        return true;
      }
      return false;
    },
  });
  return fakeProviderOf(server, {
    type: "gemini-veo",
    credentials: { apiKey },
    wrongCredentials: { apiKey: "AIzaWrongKey0123456789" },
    states: { running: "running", succeeded: "succeeded", failed: "failed" },
  });
}
