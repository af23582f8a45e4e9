/**
 * Validation of generation request bodies (docs/api/generation.md §2, §4, §7 and §8; docs/architecture.md §5).
 *
 * The input is camelCase ({@link VideoGenerationInput}): the GraphQL input as the subgraph
 * receives it, and what the REST shim makes of a snake_case body at the edge. Errors name fields
 * as the spec does (`model_id`, `reference_images`), through {@link SPEC_FIELDS}, because REST
 * clients read them. `null` means omitted for every optional field; unknown fields are ignored.
 *
 * Longer than 400 lines on purpose: the checks run in the order the spec's messages imply (object,
 * prompt, model, references, resolution, seconds, size, count, URLs), and the file reads in that
 * order; the reference readers share the field map and error builders with every other check.
 */
import { AppError, invalidFieldError, validationMessages } from "../errors.ts";
import { DEFAULT_VIDEO_MODEL_ID, IMAGE_MODEL_ID, canonicalResolution, getModel, type ModelKind, type ModelSpec, type ReferenceKind } from "./catalog.ts";
import { isBlank } from "../text.ts";

/**
 * A video generation request as the client sent it (docs/api/generation.md §2, in camelCase;
 * GraphQL `SubmitVideoGenerationInput`). Omitted and null are the same. The types are the
 * contract, not a promise: every value is checked again at run time.
 */
export interface VideoGenerationInput {
  prompt?: string | null;
  /** 52, 51, 67, 69 or 39; default 52. */
  modelId?: number | null;
  resolution?: string | null;
  /** Seconds per video. */
  seconds?: number | null;
  /** Aspect ratio. */
  size?: string | null;
  /** Items, 1-4; default 1. */
  count?: number | null;
  referenceImage?: string | null;
  referenceImages?: readonly string[] | null;
  frameStart?: string | null;
  frameEnd?: string | null;
  referenceAudio?: string | null;
  referenceAudios?: readonly string[] | null;
  referenceVideo?: string | null;
  referenceVideos?: readonly string[] | null;
}

/** An image generation request (GraphQL `SubmitImageGenerationInput`): `modelId` 45; frames, audios and videos are not read. */
export type ImageGenerationInput = Pick<VideoGenerationInput, "prompt" | "modelId" | "resolution" | "size" | "count" | "referenceImage" | "referenceImages">;

/** Either endpoint's input. */
export type GenerationInput = VideoGenerationInput | ImageGenerationInput;

/**
 * The spec's name of every input field (docs/api/generation.md §2): what `details.field` and the
 * messages of docs/api/generation.md §7 say, so REST clients read the names they send.
 */
export const SPEC_FIELDS = {
  prompt: "prompt",
  modelId: "model_id",
  resolution: "resolution",
  seconds: "seconds",
  size: "size",
  count: "count",
  referenceImage: "reference_image",
  referenceImages: "reference_images",
  frameStart: "frame_start",
  frameEnd: "frame_end",
  referenceAudio: "reference_audio",
  referenceAudios: "reference_audios",
  referenceVideo: "reference_video",
  referenceVideos: "reference_videos",
} as const satisfies Record<keyof VideoGenerationInput, string>;

type InputField = keyof typeof SPEC_FIELDS;

/** A validated request: canonical values, defaults filled in. */
export interface GenerationRequest {
  kind: ModelKind;
  modelId: number;
  modelName: string;
  /** The prompt as given (non-empty after trimming, at most {@link MAX_PROMPT_CODE_POINTS} code points). */
  prompt: string;
  /** An aspect ratio of the model, or null when omitted (then not sent upstream). */
  size: string | null;
  /** Seconds per video; null for images. */
  seconds: number | null;
  /** The catalog's canonical spelling ("720P", "1k"). */
  resolution: string;
  /** Items requested, 1-4. */
  count: number;
  references: {
    images: string[];
    audios: string[];
    videos: string[];
    frameStart: string | null;
    frameEnd: string | null;
  };
}

/** Resolves true when `url` is a public HTTPS URL (DNS included): the SSRF guard of src/net. */
export type UrlCheck = (url: string) => Promise<boolean>;

/** Longest reference URL accepted, in characters. */
const MAX_URL_LENGTH = 2048;

/**
 * Longest prompt accepted, in Unicode code points (not UTF-16 units: an emoji counts once).
 * The spec sets no limit; 4,000 is what common image providers allow (DALL·E 3: 4,000
 * characters) and far above what video models read, while keeping a stored and forwarded
 * prompt under 16 KB of UTF-8. Longer is 400 `prompt must be a non-empty string`.
 */
export const MAX_PROMPT_CODE_POINTS = 4000;

/** Whether `text` has at most `max` code points; stops counting as soon as it is over. */
function withinCodePoints(text: string, max: number): boolean {
  // A code point is one or two UTF-16 units: decided without counting in most cases.
  if (text.length <= max) return true;
  if (text.length > 2 * max) return false;
  let count = 0;
  for (const _ of text) if (++count > max) return false;
  return true;
}

/** The input fields of each reference kind, singular then plural. */
const REFERENCE_FIELDS: Record<ReferenceKind, { single: InputField; plural: InputField }> = {
  image: { single: "referenceImage", plural: "referenceImages" },
  audio: { single: "referenceAudio", plural: "referenceAudios" },
  video: { single: "referenceVideo", plural: "referenceVideos" },
};

/** 400 "{field} has an unsupported value", naming the field as the spec does. */
function unsupported(field: InputField): AppError {
  const name = SPEC_FIELDS[field];
  return new AppError("invalid_request", validationMessages.unsupported(name), { field: name });
}

/** 400 with the field's own message (`prompt`, `model_id`) or "{field} has an unsupported value". */
function invalidField(field: InputField, extra?: Record<string, unknown>): AppError {
  return invalidFieldError(SPEC_FIELDS[field], extra);
}

function notPublicUrl(field: InputField): AppError {
  const name = SPEC_FIELDS[field];
  return new AppError("invalid_request", validationMessages.publicUrl(name), { field: name });
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Omitted and null are the same for every optional field. */
function isAbsent(value: unknown): value is null | undefined {
  return value === undefined || value === null;
}

function isInteger(value: unknown): value is number {
  return typeof value === "number" && Number.isSafeInteger(value);
}

/** docs/api/generation.md §2: model_id is optional (52) for video and must be 45 for images. */
function selectModel(kind: ModelKind, value: unknown): ModelSpec {
  if (kind === "video" && isAbsent(value)) return getModel(DEFAULT_VIDEO_MODEL_ID)!;
  const model = isInteger(value) ? getModel(value) : undefined;
  if (model === undefined) throw invalidField("modelId");
  // A known model on the wrong endpoint is outside this endpoint's range, not an unknown model.
  if (model.kind !== kind) throw unsupported("modelId");
  if (kind === "image" && model.id !== IMAGE_MODEL_ID) throw unsupported("modelId");
  return model;
}

/** Reference values of one field, before URL checks; elements are not yet known to be strings. */
interface ReferenceField {
  field: InputField;
  values: unknown[];
}

/** Reads a singular reference field: absent, or a string. */
function readSingle(body: Record<string, unknown>, field: InputField): ReferenceField {
  const value = body[field];
  if (isAbsent(value)) return { field, values: [] };
  if (typeof value !== "string") throw unsupported(field);
  return { field, values: [value] };
}

/** Reads a plural reference field: absent, or an array (element types are URL checks' business). */
function readPlural(body: Record<string, unknown>, field: InputField): ReferenceField {
  const value = body[field];
  if (isAbsent(value)) return { field, values: [] };
  if (!Array.isArray(value)) throw unsupported(field);
  return { field, values: value };
}

/** One reference kind as sent: its singular and plural fields. */
interface ReferenceGroup {
  single: ReferenceField;
  plural: ReferenceField;
  count: number;
  /** The field an error about this kind names: the plural when it carries items, else the singular. */
  field: InputField;
}

function readGroup(body: Record<string, unknown>, kind: ReferenceKind): ReferenceGroup {
  const names = REFERENCE_FIELDS[kind];
  const single = readSingle(body, names.single);
  const plural = readPlural(body, names.plural);
  return {
    single,
    plural,
    count: single.values.length + plural.values.length,
    field: plural.values.length > 0 ? plural.field : single.field,
  };
}

/** A reference kind the endpoint does not read (audios and videos of an image request): nothing sent. */
function noGroup(kind: ReferenceKind): ReferenceGroup {
  const names = REFERENCE_FIELDS[kind];
  return { single: { field: names.single, values: [] }, plural: { field: names.plural, values: [] }, count: 0, field: names.single };
}

/**
 * docs/api/generation.md §2, §4 (rule 4) and §8: which reference kinds the model takes and how many.
 * Image requests read only reference_image(s).
 */
function readReferences(
  body: Record<string, unknown>,
  model: ModelSpec,
): { images: ReferenceGroup; audios: ReferenceGroup; videos: ReferenceGroup; frameStart: ReferenceField; frameEnd: ReferenceField } {
  const rules = model.references;
  const isVideo = model.kind === "video";
  const images = readGroup(body, "image");
  const audios = isVideo ? readGroup(body, "audio") : noGroup("audio");
  const videos = isVideo ? readGroup(body, "video") : noGroup("video");
  const frameStart: ReferenceField = isVideo ? readSingle(body, "frameStart") : { field: "frameStart", values: [] };
  const frameEnd: ReferenceField = isVideo ? readSingle(body, "frameEnd") : { field: "frameEnd", values: [] };

  const groups: [ReferenceKind, ReferenceGroup, number | null][] = [
    ["image", images, rules.maxImages],
    ["audio", audios, rules.maxAudios],
    ["video", videos, rules.maxVideos],
  ];
  for (const [kind, group] of groups) {
    if (group.count > 0 && !rules.kinds.includes(kind)) throw unsupported(group.field);
  }
  for (const frame of [frameStart, frameEnd]) {
    if (frame.values.length > 0 && !rules.frames) throw unsupported(frame.field);
  }
  for (const [, group, max] of groups) {
    if (max !== null && group.count > max) throw unsupported(group.field);
  }
  if (rules.maxTotal !== null) {
    // Name the kind whose items push the total over, counting in field order.
    let total = 0;
    for (const [, group] of groups) {
      total += group.count;
      if (total > rules.maxTotal) throw unsupported(group.field);
    }
  }
  if (rules.audioNeedsVisual && audios.count > 0 && images.count + videos.count === 0) {
    throw unsupported(audios.field);
  }
  return { images, audios, videos, frameStart, frameEnd };
}

/**
 * docs/api/generation.md §4, rule 3: every reference URL must be public HTTPS. Checks run concurrently; the
 * first failure in field order is reported. A non-string, empty or over-long value fails without
 * a check; a check that throws counts as a failure (fail closed).
 */
async function checkReferenceUrls(fields: ReferenceField[], checkUrl: UrlCheck): Promise<void> {
  const pending = new Map<string, Promise<boolean>>();
  const check = (url: string): Promise<boolean> => {
    let result = pending.get(url);
    if (result === undefined) {
      result = Promise.resolve()
        .then(() => checkUrl(url))
        .then(
          (ok) => ok === true,
          () => false,
        );
      pending.set(url, result);
    }
    return result;
  };
  const results = fields.map((entry) =>
    entry.values.map((value) => (typeof value === "string" && value.length > 0 && value.length <= MAX_URL_LENGTH ? check(value) : Promise.resolve(false))),
  );
  const settled = await Promise.all(results.map((list) => Promise.all(list)));
  settled.forEach((list, index) => {
    if (list.includes(false)) throw notPublicUrl(fields[index]!.field);
  });
}

/** The resolution in the catalog's spelling; the model's first when absent. */
function readResolution(model: ModelSpec, value: unknown): string {
  if (isAbsent(value)) return model.resolutions[0]!;
  const found = typeof value === "string" ? canonicalResolution(model, value) : undefined;
  if (found === undefined) throw unsupported("resolution");
  return found;
}

/** Seconds per video (the model's default when absent), allowed at `resolution`; null for images. */
function readSeconds(model: ModelSpec, resolution: string, value: unknown): number | null {
  if (model.kind !== "video") return null;
  let seconds = model.defaultSeconds;
  if (!isAbsent(value)) {
    if (!isInteger(value)) throw unsupported("seconds");
    seconds = value;
  }
  // The default is checked too: it must hold at whatever resolution was chosen.
  if (seconds === null || !model.durations?.[resolution]?.includes(seconds)) throw unsupported("seconds");
  return seconds;
}

/** Items requested, 1 to the model's maximum (1 when absent). */
function readCount(model: ModelSpec, value: unknown): number {
  if (isAbsent(value)) return 1;
  if (!isInteger(value) || value < 1 || value > model.maxCount) throw unsupported("count");
  return value;
}

/** What a price depends on, as a client sends it (GraphQL `Model.quote`); absent takes the default. */
export interface PriceParams {
  seconds?: number | null;
  resolution?: string | null;
  count?: number | null;
}

/**
 * Validates the priced parameters of a request for one model with the rules and messages of
 * {@link validateGenerationRequest} (docs/api/generation.md §2, §7): resolution, seconds (video),
 * count, defaults filled in.
 * @returns seconds per video (null for images), resolution in the catalog's spelling, count 1-4
 * @throws AppError `invalid_request` (400) with `details.field` = `resolution`, `seconds` or `count`
 */
export function validatePriceParams(model: ModelSpec, params: PriceParams): { seconds: number | null; resolution: string; count: number } {
  const resolution = readResolution(model, params.resolution);
  const seconds = readSeconds(model, resolution, params.seconds);
  return { seconds, resolution, count: readCount(model, params.count) };
}

/**
 * Validates a video or image generation request (docs/api/generation.md §2 fields, §4 rules
 * 1-4, §7 messages, §8 limits).
 *
 * Checks in order: input is an object, prompt (a string with a non-blank character, no U+0000,
 * at most {@link MAX_PROMPT_CODE_POINTS} code points), model_id, resolution, seconds (video), size, count,
 * references (types, kinds, limits, audio needs an image or video), then the reference URLs.
 *
 * @param kind the endpoint: "video" (POST /api/v1/video/generations) or "image"
 *   (POST /api/v1/images/generations)
 * @param input the request in camelCase ({@link VideoGenerationInput}); checked at run time, whatever its type says
 * @param checkUrl the public-HTTPS URL guard
 * @returns the request with canonical values and defaults: seconds per video (null for images),
 *   resolution in the catalog's spelling, count 1-4
 * @throws AppError `invalid_json` when the body is not a JSON object; `invalid_request` (400) with
 *   the spec's message and `details.field` for any invalid field
 */
export async function validateGenerationRequest(kind: ModelKind, input: GenerationInput, checkUrl: UrlCheck): Promise<GenerationRequest> {
  // Typed for callers, checked for what arrives: a JSON body may be anything.
  const body: unknown = input;
  if (!isObject(body)) throw new AppError("invalid_json");

  const prompt = body.prompt;
  // U+0000 cannot be stored in PostgreSQL text: invalid on every database.
  if (typeof prompt !== "string" || isBlank(prompt) || prompt.includes("\u0000")) throw invalidField("prompt");
  // docs/api/generation.md §7 has one message for a bad prompt; details carry the limit for GraphQL clients.
  if (!withinCodePoints(prompt, MAX_PROMPT_CODE_POINTS)) {
    throw invalidField("prompt", { max_code_points: MAX_PROMPT_CODE_POINTS });
  }

  const model = selectModel(kind, body.modelId);

  const resolution = readResolution(model, body.resolution);
  const seconds = readSeconds(model, resolution, body.seconds);

  let size: string | null = null;
  if (!isAbsent(body.size)) {
    if (typeof body.size !== "string" || !model.sizes.includes(body.size)) throw unsupported("size");
    size = body.size;
  }

  const count = readCount(model, body.count);

  const refs = readReferences(body, model);
  // Field order of the docs/api/generation.md §2 table: images, frames, audios, videos.
  await checkReferenceUrls(
    [refs.images.single, refs.images.plural, refs.frameStart, refs.frameEnd, refs.audios.single, refs.audios.plural, refs.videos.single, refs.videos.plural],
    checkUrl,
  );

  // Every value below passed the URL checks, so it is a string.
  const strings = (...fields: ReferenceField[]) => fields.flatMap((entry) => entry.values as string[]);
  return {
    kind: model.kind,
    modelId: model.id,
    modelName: model.name,
    prompt,
    size,
    seconds,
    resolution,
    count,
    references: {
      images: strings(refs.images.single, refs.images.plural),
      audios: strings(refs.audios.single, refs.audios.plural),
      videos: strings(refs.videos.single, refs.videos.plural),
      frameStart: (refs.frameStart.values[0] as string | undefined) ?? null,
      frameEnd: (refs.frameEnd.values[0] as string | undefined) ?? null,
    },
  };
}
