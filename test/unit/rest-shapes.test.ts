/**
 * The REST bodies' zod shapes as the shims use them (router/rest/shapes/; docs/adr/0025-rest-shapes.md):
 * the first wrong JSON type in the GraphQL input's field order with the spec's message, then the
 * first missing field, and the mapping onto the camelCase GraphQL input.
 */
import { describe, expect, it } from "vitest";
import { CLOUD_INPUTS, cloudErrorMap } from "../../router/rest/shapes/cloud.ts";
import { generationErrorMap, ImageGenerationRequest, VideoGenerationRequest } from "../../router/rest/shapes/generation.ts";
import { checkBody, toGraphqlInput } from "../../router/rest/shapes/zod.ts";
import { toCamel } from "../../src/names.ts";

const video = (body: Record<string, unknown>) => checkBody(VideoGenerationRequest, body, generationErrorMap);

describe("checkBody on a generation body", () => {
  it("passes a body whose types are right, whatever its values (those are the service's)", () => {
    expect(video({ prompt: "", model_id: 999, size: "bogus", count: 0, reference_images: ["http://x"] })).toBeNull();
  });

  it("names the first wrongly typed field in the input's order, with the spec's message for that field", () => {
    expect(video({ prompt: "a fox", seconds: "5", model_id: "52" })).toEqual({
      kind: "type",
      field: "model_id",
      item: false,
      message: "model_id must be one of: 52, 51, 67, 69, 39, 45",
    });
    expect(video({ prompt: 5 })).toMatchObject({ kind: "type", field: "prompt", message: "prompt must be a non-empty string" });
    expect(video({ prompt: "a fox", count: 1.5 })).toMatchObject({ kind: "type", field: "count", message: "count has an unsupported value" });
  });

  it("refuses an integer beyond 32 bits as a type, as GraphQL's Int would", () => {
    expect(video({ prompt: "a fox", seconds: 2 ** 31 })).toMatchObject({ kind: "type", field: "seconds", message: "seconds has an unsupported value" });
    expect(video({ prompt: "a fox", seconds: 2 ** 31 - 1 })).toBeNull();
  });

  it("names a bad item of a URL list with the URL message", () => {
    expect(video({ prompt: "a fox", reference_images: ["https://a.example/x.png", 7] })).toEqual({
      kind: "type",
      field: "reference_images",
      item: true,
      message: "reference_images must be a public HTTPS URL",
    });
  });

  it("reports a missing or null required field only after every present field's type", () => {
    expect(checkBody(ImageGenerationRequest, { prompt: "a fox", size: 3 }, generationErrorMap)).toMatchObject({ kind: "type", field: "size" });
    expect(checkBody(ImageGenerationRequest, { prompt: "a fox" }, generationErrorMap)).toEqual({ kind: "missing", field: "model_id" });
    expect(checkBody(ImageGenerationRequest, { prompt: null, model_id: 45 }, generationErrorMap)).toEqual({ kind: "missing", field: "prompt" });
  });
});

describe("checkBody on a cloud body", () => {
  const order = { client_order_no: "o-1", product_id: "prd_1", quantity: 1, billing_cycle: "monthly", customer: { customer_id: "c-1" } };

  it("names a nested field by its dotted path, with the cloud message", () => {
    expect(checkBody(CLOUD_INPUTS.CreateOrderInput, { ...order, customer: { customer_id: 5 } }, cloudErrorMap)).toMatchObject({
      kind: "type",
      field: "customer.customer_id",
      message: "customer.customer_id has the wrong type",
    });
    expect(checkBody(CLOUD_INPUTS.CreateOrderInput, { ...order, customer: { customer_id: null } }, cloudErrorMap)).toEqual({
      kind: "missing",
      field: "customer.customer_id",
    });
  });

  it("takes any JSON object as metadata and refuses an array", () => {
    expect(checkBody(CLOUD_INPUTS.CreateOrderInput, { ...order, metadata: { domain: "a.example", n: [1] } }, cloudErrorMap)).toBeNull();
    expect(checkBody(CLOUD_INPUTS.CreateOrderInput, { ...order, metadata: [] }, cloudErrorMap)).toMatchObject({ kind: "type", field: "metadata" });
  });
});

describe("toGraphqlInput", () => {
  it("renames the shape's fields, drops the others, keeps null and the caller's metadata as sent", () => {
    const body = { client_order_no: "o-1", customer: { customer_id: "c-1", extra: 1 }, metadata: { snake_key: null }, quantity: null, unknown: 1 };
    expect(toGraphqlInput(CLOUD_INPUTS.CreateOrderInput, body, toCamel)).toEqual({
      clientOrderNo: "o-1",
      customer: { customerId: "c-1" },
      metadata: { snake_key: null },
      quantity: null,
    });
  });
});
