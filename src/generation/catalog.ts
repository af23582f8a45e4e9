/**
 * The model catalog (docs/api/generation.md §1, §2 and §8; docs/architecture.md §5): the one data table that
 * validation, pricing, `/health`, GraphQL `models` and the /test page all read. Change a model
 * here and every reader follows.
 */

/** What a model produces. */
export type ModelKind = "video" | "image";

/** A kind of reference media a model accepts. */
export type ReferenceKind = "image" | "audio" | "video";

/** How a model is billed. All amounts are integer milli-yuan (docs/architecture.md §3). */
export type ModelPricing =
  /** Milli-yuan per second of video, per resolution. */
  | { kind: "per_second"; milliPerSecond: Readonly<Record<string, number>> }
  /**
   * Upstream points: per item ceil(seconds × rate), rate per second in tenths of a point per
   * resolution (1.5 points is 15); each point costs `milliPerPoint` milli-yuan.
   */
  | { kind: "points"; pointsRateTenths: Readonly<Record<string, number>>; milliPerPoint: number }
  /** Milli-yuan per generated image. */
  | { kind: "per_image"; milliPerImage: number };

/** Which reference media a model takes, and how many (docs/api/generation.md §2 and §8). */
export interface ReferenceRules {
  /** Kinds accepted through reference_image(s), reference_audio(s), reference_video(s). */
  kinds: readonly ReferenceKind[];
  /** True when frame_start / frame_end are accepted (model 39 only). */
  frames: boolean;
  /** Per-kind limits; null means no per-kind limit (model 67, limited by `maxTotal`). */
  maxImages: number | null;
  maxAudios: number | null;
  maxVideos: number | null;
  /** Limit on images + audios + videos together; null when only per-kind limits apply. */
  maxTotal: number | null;
  /** True when a request with audio must also carry at least one image or video (docs/api/generation.md §4 rule 4). */
  audioNeedsVisual: boolean;
}

/** One model of the catalog. */
export interface ModelSpec {
  id: number;
  name: string;
  kind: ModelKind;
  /** Allowed aspect ratios, in the spec's order (image 45 includes "auto"). */
  sizes: readonly string[];
  /** Canonical spellings ("480P", "720P", "1080P"; image "1k"), lowest first. */
  resolutions: readonly string[];
  /** Allowed seconds per resolution, ascending; null for images. */
  durations: Readonly<Record<string, readonly number[]>> | null;
  /** Seconds used when a video request omits `seconds`; null for images. */
  defaultSeconds: number | null;
  pricing: ModelPricing;
  references: ReferenceRules;
  /** Largest `count` per request (docs/api/generation.md §8). */
  maxCount: 4;
  /**
   * Seconds a task may stay open (status 0, 3 or 4) after its submission; past it the task is
   * failed with `Generation timed out` and refunded (a later upstream success is only recorded).
   */
  deadlineSeconds: number;
}

/** Integers from `from` to `to`, inclusive. */
function range(from: number, to: number): number[] {
  return Array.from({ length: to - from + 1 }, (_, i) => from + i);
}

/** Freezes the table all the way down, so no reader can change what the others see. */
function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === "object" && !Object.isFrozen(value)) {
    for (const inner of Object.values(value)) deepFreeze(inner);
    Object.freeze(value);
  }
  return value;
}

// docs/api/generation.md §8: every video model but 67 takes at most 9 images, 3 audios, 3 videos.
const STANDARD_VIDEO_REFERENCES = {
  kinds: ["image", "audio", "video"],
  frames: false,
  maxImages: 9,
  maxAudios: 3,
  maxVideos: 3,
  maxTotal: null,
} as const;

/** Deadline of a video task: 30 minutes. */
const VIDEO_DEADLINE_SECONDS = 30 * 60;
/** Deadline of an image task: 10 minutes. */
const IMAGE_DEADLINE_SECONDS = 10 * 60;

/**
 * The six models, in the order of the spec's `model_id` message (docs/api/generation.md §7: videos
 * 52, 51, 67, 69, 39; image 45): that message, the OpenAPI enums and `/health` all list them from here.
 */
export const MODELS: readonly ModelSpec[] = deepFreeze<ModelSpec[]>([
  {
    id: 52,
    name: "video-52",
    kind: "video",
    sizes: ["9:16", "16:9", "1:1", "4:3", "3:2", "2:3", "21:9"],
    resolutions: ["720P"],
    durations: { "720P": range(4, 15) },
    defaultSeconds: 5,
    pricing: { kind: "per_second", milliPerSecond: { "720P": 1000 } },
    references: { ...STANDARD_VIDEO_REFERENCES, audioNeedsVisual: true },
    maxCount: 4,
    deadlineSeconds: VIDEO_DEADLINE_SECONDS,
  },
  {
    id: 51,
    name: "video-51",
    kind: "video",
    sizes: ["9:16", "16:9", "1:1", "3:2", "2:3", "21:9"],
    resolutions: ["480P", "720P"],
    durations: { "480P": range(4, 15), "720P": range(4, 15) },
    defaultSeconds: 4,
    pricing: { kind: "per_second", milliPerSecond: { "480P": 1000, "720P": 1000 } },
    // docs/api/generation.md §4 rule 4 names 52, 67 and 69 only: 51 takes audio alone.
    references: { ...STANDARD_VIDEO_REFERENCES, audioNeedsVisual: false },
    maxCount: 4,
    deadlineSeconds: VIDEO_DEADLINE_SECONDS,
  },
  {
    id: 67,
    name: "video-67",
    kind: "video",
    sizes: ["9:16", "16:9", "3:4", "4:3", "3:2", "2:3", "21:9"],
    resolutions: ["480P", "720P"],
    durations: { "480P": [...range(5, 15), 20, 25, 30], "720P": range(4, 30) },
    defaultSeconds: 5,
    pricing: { kind: "per_second", milliPerSecond: { "480P": 1000, "720P": 2000 } },
    references: {
      kinds: ["image", "audio", "video"],
      frames: false,
      maxImages: null,
      maxAudios: null,
      maxVideos: null,
      maxTotal: 30,
      audioNeedsVisual: true,
    },
    maxCount: 4,
    deadlineSeconds: VIDEO_DEADLINE_SECONDS,
  },
  {
    id: 69,
    name: "video-69",
    kind: "video",
    sizes: ["9:16", "16:9", "3:4", "4:3", "1:1"],
    resolutions: ["480P", "720P", "1080P"],
    durations: { "480P": range(4, 30), "720P": range(4, 30), "1080P": range(4, 30) },
    defaultSeconds: 4,
    // 1.25 yuan per 10 points = 125 milli-yuan per point.
    pricing: { kind: "points", pointsRateTenths: { "480P": 15, "720P": 30, "1080P": 60 }, milliPerPoint: 125 },
    references: { ...STANDARD_VIDEO_REFERENCES, audioNeedsVisual: true },
    maxCount: 4,
    deadlineSeconds: VIDEO_DEADLINE_SECONDS,
  },
  {
    id: 39,
    name: "video-39",
    kind: "video",
    sizes: ["16:9", "9:16", "4:3", "3:4", "1:1"],
    resolutions: ["720P"],
    durations: { "720P": [5, 10, 15] },
    defaultSeconds: 5,
    pricing: { kind: "per_second", milliPerSecond: { "720P": 400 } },
    // Images and first/last frames only; 0 (not null) so no reader mistakes it for "unlimited".
    references: {
      kinds: ["image"],
      frames: true,
      maxImages: 9,
      maxAudios: 0,
      maxVideos: 0,
      maxTotal: null,
      audioNeedsVisual: false,
    },
    maxCount: 4,
    deadlineSeconds: VIDEO_DEADLINE_SECONDS,
  },
  {
    id: 45,
    name: "image-45",
    kind: "image",
    sizes: ["auto", "1:1", "3:2", "2:3", "4:3", "3:4", "5:4", "4:5", "16:9", "9:16", "2:1", "1:2", "21:9", "9:21"],
    resolutions: ["1k"],
    durations: null,
    defaultSeconds: null,
    pricing: { kind: "per_image", milliPerImage: 300 },
    references: {
      kinds: ["image"],
      frames: false,
      maxImages: 9,
      maxAudios: 0,
      maxVideos: 0,
      maxTotal: null,
      audioNeedsVisual: false,
    },
    maxCount: 4,
    deadlineSeconds: IMAGE_DEADLINE_SECONDS,
  },
]);

/** The model a video request without model_id uses (docs/api/generation.md §1). */
export const DEFAULT_VIDEO_MODEL_ID = 52;

/** The one image model (docs/api/generation.md §1). */
export const IMAGE_MODEL_ID = 45;

/** Every model id, in catalog order. */
export const MODEL_IDS: readonly number[] = Object.freeze(MODELS.map((model) => model.id));

/** The video models' ids, in catalog order. */
export const VIDEO_MODEL_IDS: readonly number[] = Object.freeze(MODELS.filter((model) => model.kind === "video").map((model) => model.id));

const BY_ID = new Map(MODELS.map((model) => [model.id, model]));

/**
 * Looks a model up by its spec model_id.
 * @param id the model_id (52, 67, 69, 51, 39 or 45)
 * @returns the model, or undefined when the catalog has no such model
 */
export function getModel(id: number): ModelSpec | undefined {
  return BY_ID.get(id);
}

/**
 * Matches a resolution case-insensitively against a model's resolutions (docs/architecture.md §5):
 * "720p" → "720P", "1K" → "1k".
 * @returns the catalog's canonical spelling, or undefined when the model does not offer it
 */
export function canonicalResolution(model: ModelSpec, value: string): string | undefined {
  const wanted = value.toLowerCase();
  return model.resolutions.find((resolution) => resolution.toLowerCase() === wanted);
}
