import { describe, expect, it } from "vitest";
import { MODELS, getModel, type ModelSpec } from "../../src/generation/catalog.ts";
import { priceOf, quote, unitPriceOf } from "../../src/generation/pricing.ts";
import { validateGenerationRequest } from "../../src/generation/validation.ts";
import { AppError } from "../../src/errors.ts";
import { formatYuan } from "../../src/money.ts";

function model(id: number): ModelSpec {
  const found = getModel(id);
  if (!found) throw new Error(`no model ${id}`);
  return found;
}

/** The price in yuan as the REST body shows it. */
function yuan(id: number, seconds: number | null, resolution: string, count: number): string {
  return formatYuan(priceOf(model(id), { seconds, resolution, count }));
}

describe("billing check table of docs/api/generation.md §4", () => {
  it.each([
    [52, 5, "720P", 1, "5.00"],
    [52, 15, "720P", 4, "60.00"],
    [67, 30, "480P", 1, "30.00"],
    [67, 30, "720P", 1, "60.00"],
    [69, 4, "480P", 1, "0.75"],
    [69, 4, "720P", 1, "1.50"],
    [69, 4, "1080P", 1, "3.00"],
    [51, 8, "480P", 2, "16.00"],
    [51, 8, "720P", 2, "16.00"],
    [39, 5, "720P", 2, "4.00"],
    [39, 15, "720P", 4, "24.00"],
  ])("charges model %i for %i s at %s × %i: %s yuan", (id, seconds, resolution, count, expected) => {
    expect(yuan(id, seconds, resolution, count)).toBe(expected);
  });

  it.each([
    [1, 300],
    [2, 600],
    [3, 900],
    [4, 1200],
  ])("charges 0.30 yuan per image for %i images of model 45", (count, milli) => {
    expect(priceOf(model(45), { seconds: null, resolution: "1k", count })).toBe(milli);
  });

  it("charges nothing for an image task settled to zero images", () => {
    expect(priceOf(model(45), { seconds: null, resolution: "1k", count: 0 })).toBe(0);
  });
});

describe("model 69 points rounding (docs/architecture.md §3)", () => {
  it.each([
    // seconds, resolution, count, points per item, milli-yuan
    [5, "480P", 1, 8, 1000], // 7.5 points → 8
    [6, "480P", 1, 9, 1125], // exactly 9
    [7, "480P", 3, 11, 4125], // 10.5 → 11, × 3
    [9, "480P", 1, 14, 1750], // 13.5 → 14
    [30, "480P", 1, 45, 5625],
    [5, "720P", 1, 15, 1875],
    [5, "1080P", 2, 30, 7500],
    [30, "1080P", 4, 180, 90000],
  ])("charges %i s at %s × %i as %i points per item = %i milli-yuan", (seconds, resolution, count, points, milli) => {
    expect(priceOf(model(69), { seconds, resolution, count })).toBe(milli);
    expect(unitPriceOf(model(69), { seconds, resolution })).toBe(points * 125);
  });

  it("rounds any fraction of a point up, not to the nearest point", () => {
    // A rate of 1.1 points per second: 1 s is 1.1 points → 2; 10 s is exactly 11.
    const odd: ModelSpec = {
      ...model(69),
      pricing: { kind: "points", pointsRateTenths: { "480P": 11 }, milliPerPoint: 125 },
    };
    expect(priceOf(odd, { seconds: 1, resolution: "480P", count: 1 })).toBe(2 * 125);
    expect(priceOf(odd, { seconds: 10, resolution: "480P", count: 1 })).toBe(11 * 125);
  });

  it("shows fractional prices with three decimals", () => {
    expect(yuan(69, 6, "480P", 1)).toBe("1.125");
    expect(yuan(69, 5, "480P", 1)).toBe("1.00");
    expect(yuan(69, 7, "480P", 3)).toBe("4.125");
  });
});

describe("pricing details", () => {
  it("prices model 67 by resolution: 720P costs twice 480P", () => {
    expect(priceOf(model(67), { seconds: 10, resolution: "480P", count: 1 })).toBe(10_000);
    expect(priceOf(model(67), { seconds: 10, resolution: "720P", count: 1 })).toBe(20_000);
  });

  it("matches the resolution case-insensitively", () => {
    expect(priceOf(model(69), { seconds: 6, resolution: "480p", count: 1 })).toBe(1125);
    expect(priceOf(model(67), { seconds: 5, resolution: "720p", count: 1 })).toBe(10_000);
  });

  it("gives the price of one item as the unit price", () => {
    expect(unitPriceOf(model(52), { seconds: 7, resolution: "720P" })).toBe(7000);
    expect(unitPriceOf(model(39), { seconds: 10, resolution: "720P" })).toBe(4000);
    expect(unitPriceOf(model(45), { seconds: null, resolution: "1k" })).toBe(300);
  });

  it("returns an integer for every allowed combination of every model", () => {
    for (const spec of MODELS) {
      for (const resolution of spec.resolutions) {
        const durations = spec.durations?.[resolution] ?? [null];
        for (const seconds of durations) {
          for (let count = 1; count <= spec.maxCount; count++) {
            const price = priceOf(spec, { seconds, resolution, count });
            expect(Number.isSafeInteger(price), `${spec.id} ${resolution} ${seconds} ${count}`).toBe(true);
            expect(price).toBeGreaterThan(0);
          }
        }
      }
    }
  });

  it("refuses a resolution the model does not offer", () => {
    expect(() => priceOf(model(52), { seconds: 5, resolution: "480P", count: 1 })).toThrow(RangeError);
    expect(() => priceOf(model(69), { seconds: 5, resolution: "4K", count: 1 })).toThrow(RangeError);
  });

  it("refuses missing or fractional seconds for a video model", () => {
    expect(() => priceOf(model(52), { seconds: null, resolution: "720P", count: 1 })).toThrow(RangeError);
    expect(() => priceOf(model(69), { seconds: 4.5, resolution: "480P", count: 1 })).toThrow(RangeError);
  });

  it("refuses a count above 4 or a fractional count", () => {
    expect(() => priceOf(model(52), { seconds: 5, resolution: "720P", count: 5 })).toThrow(RangeError);
    expect(() => priceOf(model(45), { seconds: null, resolution: "1k", count: 1.5 })).toThrow(RangeError);
  });
});

describe("quote (GraphQL Model.quote, the price preview)", () => {
  it("quotes what a submission with the same parameters is charged, for every combination of every model", async () => {
    for (const spec of MODELS) {
      for (const resolution of spec.resolutions) {
        for (const seconds of spec.durations?.[resolution] ?? [null]) {
          for (let count = 1; count <= spec.maxCount; count++) {
            const body = { prompt: "a fox", modelId: spec.id, seconds, resolution: resolution.toLowerCase(), count };
            const charged = priceOf(spec, await validateGenerationRequest(spec.kind, body, async () => true));
            expect(quote(spec, { seconds, resolution: resolution.toLowerCase(), count }), `${spec.id} ${resolution} ${seconds} ${count}`).toBe(charged);
          }
        }
      }
    }
  });

  it("fills in the model's defaults for absent parameters", () => {
    expect(quote(model(52), {})).toBe(5_000); // 5 s at 720P, one video
    expect(quote(model(69), { seconds: null, resolution: null, count: null })).toBe(750); // 4 s at 480P: 6 points
    expect(quote(model(45), {})).toBe(300);
  });

  it.each([
    [52, { resolution: "480P" }, "resolution"],
    [52, { seconds: 3 }, "seconds"],
    [67, { resolution: "480P", seconds: 4 }, "seconds"],
    [45, { count: 5 }, "count"],
    [39, { count: 0 }, "count"],
  ])("refuses model %i with %o as invalid_request naming %s", (id, params, field) => {
    let error: unknown;
    try {
      quote(model(id), params);
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(AppError);
    expect(error).toMatchObject({ code: "invalid_request", details: { field } });
  });
});
