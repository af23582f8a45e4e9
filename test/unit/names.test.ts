import { describe, expect, it } from "vitest";
import { toCamel, toSnake, toSpecShape } from "../../src/names.ts";
import { requestHash } from "../../src/cloud/idempotency.ts";

describe("the one name converter (src/names.ts)", () => {
  it("turns names both ways and back", () => {
    for (const [camel, snake] of [
      ["referenceImages", "reference_images"],
      ["modelId", "model_id"],
      ["urls", "urls"],
    ]) {
      expect(toSnake(camel!)).toBe(snake);
      expect(toCamel(snake!)).toBe(camel);
    }
  });

  it("gives a camelCase order input the spec's snake_case shape and keeps the caller's metadata as sent", () => {
    const input = { productId: "prod_1", billingCycle: "monthly", customer: { customerId: "c1" }, metadata: { myKey: 1, nested: { innerKey: true } } };
    expect(toSpecShape(input)).toEqual({
      product_id: "prod_1",
      billing_cycle: "monthly",
      customer: { customer_id: "c1" },
      metadata: { myKey: 1, nested: { innerKey: true } },
    });
  });

  it("fingerprints an idempotent request as releases before typed inputs did, so a retry across a deploy replays", () => {
    // The form stored before: the spec's snake body with the caller's metadata untouched.
    const stored = requestHash("order.create", { product_id: "prod_1", billing_cycle: "monthly", customer: { customer_id: "c1" }, metadata: { myKey: 1 } });
    const now = requestHash(
      "order.create",
      toSpecShape({ productId: "prod_1", billingCycle: "monthly", customer: { customerId: "c1" }, metadata: { myKey: 1 } }),
    );
    expect(now).toBe(stored);
    // Metadata keys are the caller's: `myKey` and `my_key` are different requests.
    expect(requestHash("order.create", toSpecShape({ metadata: { my_key: 1 } }))).not.toBe(
      requestHash("order.create", toSpecShape({ metadata: { myKey: 1 } })),
    );
  });
});
