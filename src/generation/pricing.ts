/**
 * Prices of generation requests (docs/api/generation.md §4, "Billing"; docs/architecture.md §3): integer
 * milli-yuan, integer arithmetic only, read from the catalog's pricing entries.
 */
import type { MilliYuan } from "../money.ts";
import { assertMilli } from "../money.ts";
import { canonicalResolution, type ModelSpec } from "./catalog.ts";
import { validatePriceParams, type PriceParams } from "./validation.ts";

/** What a price depends on: seconds (null for images), resolution, and the number of items. */
export interface PriceInput {
  /** Seconds of video per item; ignored (may be null) for image models. */
  seconds: number | null;
  /** A resolution of the model, any letter case. */
  resolution: string;
  /** Items requested (videos or images), 1-4. */
  count: number;
}

/**
 * The price of one item (one video or one image) of a request, for the price preview.
 * @param model the catalog model
 * @param req seconds per video (null for images) and resolution
 * @returns integer milli-yuan
 * @throws RangeError when the resolution is not the model's or seconds is not a positive integer
 *   (a programming error: requests are validated first)
 */
export function unitPriceOf(model: ModelSpec, req: { seconds: number | null; resolution: string }): MilliYuan {
  const pricing = model.pricing;
  if (pricing.kind === "per_image") return assertMilli(pricing.milliPerImage);

  const resolution = canonicalResolution(model, req.resolution);
  if (resolution === undefined) throw new RangeError(`model ${model.id} has no resolution ${req.resolution}`);
  const seconds = req.seconds;
  if (seconds === null || !Number.isSafeInteger(seconds) || seconds <= 0) {
    throw new RangeError(`not a positive whole number of seconds: ${seconds}`);
  }

  if (pricing.kind === "per_second") {
    const perSecond = pricing.milliPerSecond[resolution];
    if (perSecond === undefined) throw new RangeError(`model ${model.id} has no price for ${resolution}`);
    return assertMilli(seconds * perSecond);
  }

  const rateTenths = pricing.pointsRateTenths[resolution];
  if (rateTenths === undefined) throw new RangeError(`model ${model.id} has no points rate for ${resolution}`);
  // ceil(seconds × rate) with the rate in tenths, without a float: ceil(a / 10) = floor((a + 9) / 10).
  const points = Math.floor((seconds * rateTenths + 9) / 10);
  return assertMilli(points * pricing.milliPerPoint);
}

/**
 * The amount deducted for a generation request (docs/api/generation.md §4, "Billing"): seconds × count ×
 * per-second price (52, 51, 39; 67 by resolution), count × ceil(seconds × rate) points × 125
 * milli-yuan (69), or count × 300 milli-yuan (image 45, settled later to the images generated).
 * @param model the catalog model
 * @param req seconds per video (null for images), resolution (any letter case), count 1-4
 * @returns integer milli-yuan
 * @throws RangeError when the input is outside the model's pricing (a programming error: requests
 *   are validated first)
 */
export function priceOf(model: ModelSpec, req: PriceInput): MilliYuan {
  if (!Number.isSafeInteger(req.count) || req.count < 0 || req.count > model.maxCount) {
    throw new RangeError(`not a count of 0-${model.maxCount}: ${req.count}`);
  }
  return assertMilli(req.count * unitPriceOf(model, req));
}

/**
 * The price preview of a request (GraphQL `Model.quote`; docs/api/generation.md §4 "Billing"): what
 * {@link priceOf} would debit for these parameters, checked as a submission checks them.
 * @param model the catalog model
 * @param params seconds per video, resolution (any letter case), count; absent or null take the
 *   model's defaults
 * @returns integer milli-yuan
 * @throws AppError `invalid_request` (400) with `details.field` for a parameter the model does not take
 */
export function quote(model: ModelSpec, params: PriceParams): MilliYuan {
  return priceOf(model, validatePriceParams(model, params));
}
