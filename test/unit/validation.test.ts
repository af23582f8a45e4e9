import { describe, expect, it } from "vitest";
import { AppError } from "../../src/errors.ts";
import { MODELS, getModel, type ModelKind } from "../../src/generation/catalog.ts";
import { MAX_PROMPT_CODE_POINTS, validateGenerationRequest, type GenerationInput, type UrlCheck } from "../../src/generation/validation.ts";
import { toCamel } from "../../src/names.ts";

// The real URL guard is tested elsewhere; this stub rejects any URL containing "private".
const checkUrl: UrlCheck = async (url) => !url.includes("private");

const IMG = "https://cdn.example.com/a.png";
const IMG2 = "https://cdn.example.com/b.png";
const AUDIO = "https://cdn.example.com/a.mp3";
const VIDEO = "https://cdn.example.com/a.mp4";
const PRIVATE = "https://private.example.com/x.png";

const urls = (n: number, prefix = "https://cdn.example.com/i") => Array.from({ length: n }, (_, i) => `${prefix}${i}.png`);

/** Validates any value: the validator checks at run time what its type only promises. */
function validate(kind: ModelKind, body: unknown, check: UrlCheck = checkUrl) {
  return validateGenerationRequest(kind, body as GenerationInput, check);
}

const video = (fields: Record<string, unknown>) => validate("video", { prompt: "a cat", ...fields });
const image = (fields: Record<string, unknown>) => validate("image", { prompt: "a cat", modelId: 45, ...fields });

async function rejection(promise: Promise<unknown>): Promise<AppError> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(AppError);
    return error as AppError;
  }
  throw new Error("expected the request to be rejected, but it was accepted");
}

/** Asserts a 400 invalid_request with exactly this message (and field, when given). */
async function expectInvalid(promise: Promise<unknown>, message: string, field?: string): Promise<void> {
  const error = await rejection(promise);
  expect(error.message).toBe(message);
  expect(error.code).toBe("invalid_request");
  expect(error.status).toBe(400);
  if (field !== undefined) expect(error.details).toEqual({ field });
}

const unsupported = (field: string) => `${field} has an unsupported value`;
const notPublic = (field: string) => `${field} must be a public HTTPS URL`;
const MODEL_ID_MESSAGE = "model_id must be one of: 52, 51, 67, 69, 39, 45";

describe("request body", () => {
  it.each([
    ["null", null],
    ["an array", [{ prompt: "a cat" }]],
    ["a string", "a cat"],
    ["a number", 42],
    ["undefined", undefined],
  ])("rejects %s as invalid JSON", async (_name, body) => {
    const error = await rejection(validate("video", body));
    expect(error.code).toBe("invalid_json");
    expect(error.status).toBe(400);
    expect(error.message).toBe("Request body must be valid JSON");
  });

  it("ignores unknown fields", async () => {
    const request = await video({ colour: "blue", webhook: 5 });
    expect(request.modelId).toBe(52);
  });

  it("reads camelCase only: a snake_case key is an unknown field (the REST shim converts at the edge)", async () => {
    const request = await video({ model_id: 69, reference_images: [PRIVATE] });
    expect(request.modelId).toBe(52);
    expect(request.references.images).toEqual([]);
  });
});

describe("prompt", () => {
  it.each([
    ["missing", {}],
    ["empty", { prompt: "" }],
    ["only spaces", { prompt: "   \n\t" }],
    ["a number", { prompt: 5 }],
    ["null", { prompt: null }],
    ["an array", { prompt: ["a cat"] }],
  ])("rejects a prompt that is %s", async (_name, body) => {
    await expectInvalid(validate("video", body), "prompt must be a non-empty string", "prompt");
    await expectInvalid(validate("image", { ...body, modelId: 45 }), "prompt must be a non-empty string");
  });

  it("checks the prompt before model_id", async () => {
    await expectInvalid(validate("video", { prompt: "", modelId: 999 }), "prompt must be a non-empty string");
    await expectInvalid(validate("image", { prompt: " " }), "prompt must be a non-empty string");
  });

  it("keeps the prompt as given", async () => {
    expect((await validate("video", { prompt: "  a cat  " })).prompt).toBe("  a cat  ");
  });
});

describe("prompt length", () => {
  /** Asserts the 400 of an over-long prompt: the spec's prompt message, the field and the limit. */
  async function expectTooLong(promise: Promise<unknown>): Promise<void> {
    const error = await rejection(promise);
    expect([error.status, error.code, error.message]).toEqual([400, "invalid_request", "prompt must be a non-empty string"]);
    expect(error.details).toEqual({ field: "prompt", max_code_points: 4000 });
  }

  it("documents a limit of 4000 code points", () => {
    expect(MAX_PROMPT_CODE_POINTS).toBe(4000);
  });

  it("accepts a prompt of exactly 4000 code points on both endpoints", async () => {
    const prompt = "a".repeat(4000);
    expect((await video({ prompt })).prompt).toBe(prompt);
    expect((await image({ prompt })).prompt).toBe(prompt);
  });

  it("rejects a prompt of 4001 code points with the spec's prompt message on both endpoints", async () => {
    await expectTooLong(video({ prompt: "a".repeat(4001) }));
    await expectTooLong(image({ prompt: "a".repeat(4001) }));
  });

  it("rejects a 900 KB prompt before any other field is looked at", async () => {
    await expectTooLong(validate("video", { prompt: "x".repeat(900 * 1024), modelId: 999 }));
  });

  it("counts code points, not UTF-16 units: 4000 emoji (8000 units) pass, 4001 do not", async () => {
    const emoji = "\u{1F98A}";
    expect(emoji.length).toBe(2);
    expect((await video({ prompt: emoji.repeat(4000) })).prompt).toHaveLength(8000);
    await expectTooLong(video({ prompt: emoji.repeat(4001) }));
    // Mixed: 3999 one-unit characters and one two-unit emoji are 4000 code points.
    expect((await video({ prompt: "a".repeat(3999) + emoji })).prompt).toHaveLength(4001);
    await expectTooLong(video({ prompt: "a".repeat(4000) + emoji }));
  });
});

describe("model_id on the video endpoint", () => {
  it("uses model 52 when model_id is omitted or null", async () => {
    for (const body of [{ prompt: "a cat" }, { prompt: "a cat", modelId: null }]) {
      const request = await validate("video", body);
      expect(request.modelId).toBe(52);
      expect(request.modelName).toBe("video-52");
      expect(request.kind).toBe("video");
    }
  });

  it.each([52, 67, 69, 51, 39])("accepts video model %i", async (id) => {
    const request = await video({ modelId: id });
    expect(request.modelId).toBe(id);
    expect(request.modelName).toBe(`video-${id}`);
  });

  it("rejects the image model 45 as an unsupported value", async () => {
    await expectInvalid(video({ modelId: 45 }), unsupported("model_id"), "model_id");
  });

  it.each([
    ["an unknown number", 99],
    ["zero", 0],
    ["a numeric string", "52"],
    ["a fraction", 52.5],
    ["a boolean", true],
    ["an array", [52]],
  ])("rejects %s with the list of models", async (_name, value) => {
    await expectInvalid(video({ modelId: value }), MODEL_ID_MESSAGE, "model_id");
  });

  it("checks model_id before the other fields", async () => {
    await expectInvalid(video({ modelId: 99, resolution: "9K", seconds: 99, count: 9 }), MODEL_ID_MESSAGE);
  });
});

describe("model_id on the image endpoint", () => {
  it("accepts model 45", async () => {
    const request = await image({});
    expect(request).toMatchObject({ kind: "image", modelId: 45, modelName: "image-45" });
  });

  it("requires model_id", async () => {
    await expectInvalid(validate("image", { prompt: "a cat" }), MODEL_ID_MESSAGE, "model_id");
    await expectInvalid(validate("image", { prompt: "a cat", modelId: null }), MODEL_ID_MESSAGE, "model_id");
  });

  it.each([52, 67, 69, 51, 39])("rejects video model %i as an unsupported value", async (id) => {
    await expectInvalid(image({ modelId: id }), unsupported("model_id"), "model_id");
  });

  it.each([99, "45", 45.5])("rejects %j with the list of models", async (value) => {
    await expectInvalid(image({ modelId: value }), MODEL_ID_MESSAGE, "model_id");
  });
});

describe("resolution", () => {
  it.each([
    [52, "720P"],
    [67, "480P"],
    [69, "480P"],
    [51, "480P"],
    [39, "720P"],
  ])("uses the lowest resolution of model %i when omitted: %s", async (id, expected) => {
    expect((await video({ modelId: id })).resolution).toBe(expected);
    expect((await video({ modelId: id, resolution: null })).resolution).toBe(expected);
  });

  it("uses 1k for images when omitted", async () => {
    expect((await image({})).resolution).toBe("1k");
  });

  it("matches case-insensitively and returns the canonical spelling", async () => {
    expect((await video({ modelId: 67, resolution: "720p" })).resolution).toBe("720P");
    expect((await video({ modelId: 69, resolution: "1080p" })).resolution).toBe("1080P");
    expect((await image({ resolution: "1K" })).resolution).toBe("1k");
  });

  it.each([
    [52, "480P"],
    [51, "1080P"],
    [67, "1080P"],
    [69, "4K"],
    [39, "480P"],
    [52, " 720P"],
    [52, 720],
    [52, ""],
  ])("rejects for model %i the resolution %j", async (id, value) => {
    await expectInvalid(video({ modelId: id, resolution: value }), unsupported("resolution"), "resolution");
  });

  it("rejects an image resolution other than 1k", async () => {
    await expectInvalid(image({ resolution: "2k" }), unsupported("resolution"), "resolution");
    await expectInvalid(image({ resolution: "720P" }), unsupported("resolution"));
  });

  it("checks resolution before seconds", async () => {
    await expectInvalid(video({ modelId: 52, resolution: "480P", seconds: 99 }), unsupported("resolution"));
  });
});

describe("seconds", () => {
  it.each([
    [52, 5],
    [67, 5],
    [69, 4],
    [51, 4],
    [39, 5],
  ])("uses the default of model %i when omitted: %i s", async (id, expected) => {
    expect((await video({ modelId: id })).seconds).toBe(expected);
    expect((await video({ modelId: id, seconds: null })).seconds).toBe(expected);
  });

  it("uses the default of model 67 at 720P too", async () => {
    expect((await video({ modelId: 67, resolution: "720P" })).seconds).toBe(5);
  });

  it.each([
    [52, "720P", 4],
    [52, "720P", 15],
    [67, "480P", 5],
    [67, "480P", 15],
    [67, "480P", 20],
    [67, "480P", 25],
    [67, "480P", 30],
    [67, "720P", 4],
    [67, "720P", 16],
    [67, "720P", 20],
    [67, "720P", 30],
    [69, "480P", 4],
    [69, "720P", 17],
    [69, "1080P", 30],
    [51, "480P", 4],
    [51, "720P", 15],
    [39, "720P", 5],
    [39, "720P", 10],
    [39, "720P", 15],
  ])("accepts model %i at %s for %i s", async (id, resolution, seconds) => {
    expect((await video({ modelId: id, resolution, seconds })).seconds).toBe(seconds);
  });

  it.each([
    [52, "720P", 3],
    [52, "720P", 16],
    [67, "480P", 4],
    [67, "480P", 16],
    [67, "480P", 21],
    [67, "480P", 31],
    [67, "720P", 3],
    [67, "720P", 31],
    [69, "480P", 3],
    [69, "1080P", 31],
    [51, "480P", 3],
    [51, "720P", 16],
    [39, "720P", 4],
    [39, "720P", 6],
    [39, "720P", 20],
  ])("rejects model %i at %s for %i s", async (id, resolution, seconds) => {
    await expectInvalid(video({ modelId: id, resolution, seconds }), unsupported("seconds"), "seconds");
  });

  it.each([
    ["a fraction", 5.5],
    ["a numeric string", "5"],
    ["a boolean", true],
    ["zero", 0],
    ["negative", -5],
  ])("rejects seconds that is %s", async (_name, value) => {
    await expectInvalid(video({ seconds: value }), unsupported("seconds"), "seconds");
  });

  it("ignores seconds on image requests", async () => {
    expect((await image({ seconds: "junk" })).seconds).toBeNull();
    expect((await image({ seconds: 5 })).seconds).toBeNull();
  });

  it("checks seconds before size", async () => {
    await expectInvalid(video({ seconds: 99, size: "7:7" }), unsupported("seconds"));
  });
});

describe("size", () => {
  it("is null when omitted or null", async () => {
    expect((await video({})).size).toBeNull();
    expect((await video({ size: null })).size).toBeNull();
    expect((await image({})).size).toBeNull();
  });

  it.each([
    [52, "21:9"],
    [67, "3:4"],
    [69, "1:1"],
    [51, "2:3"],
    [39, "4:3"],
  ])("accepts for model %i the size %s", async (id, size) => {
    expect((await video({ modelId: id, size })).size).toBe(size);
  });

  it.each([
    [52, "3:4"],
    [67, "1:1"],
    [69, "21:9"],
    [51, "4:3"],
    [39, "21:9"],
    [52, "auto"],
    [52, "16:9 "],
    [52, 1.77],
  ])("rejects for model %i the size %j", async (id, size) => {
    await expectInvalid(video({ modelId: id, size }), unsupported("size"), "size");
  });

  it("accepts auto and 9:21 for images but not 7:3", async () => {
    expect((await image({ size: "auto" })).size).toBe("auto");
    expect((await image({ size: "9:21" })).size).toBe("9:21");
    await expectInvalid(image({ size: "7:3" }), unsupported("size"), "size");
  });

  it("checks size before count", async () => {
    await expectInvalid(video({ size: "7:7", count: 9 }), unsupported("size"));
  });
});

describe("count", () => {
  it("defaults to 1", async () => {
    expect((await video({})).count).toBe(1);
    expect((await video({ count: null })).count).toBe(1);
    expect((await image({})).count).toBe(1);
  });

  it.each([1, 2, 3, 4])("accepts %i", async (count) => {
    expect((await video({ count })).count).toBe(count);
    expect((await image({ count })).count).toBe(count);
  });

  it.each([0, 5, -1, 2.5, "2", true])("rejects %j", async (count) => {
    await expectInvalid(video({ count }), unsupported("count"), "count");
    await expectInvalid(image({ count }), unsupported("count"), "count");
  });

  it("checks count before references", async () => {
    await expectInvalid(video({ count: 5, referenceImage: 5 }), unsupported("count"));
  });
});

describe("references: kinds per model", () => {
  it("merges the singular and plural fields, singular first", async () => {
    const request = await video({
      referenceImage: IMG,
      referenceImages: [IMG2],
      referenceAudio: AUDIO,
      referenceAudios: ["https://cdn.example.com/b.mp3"],
      referenceVideo: VIDEO,
      referenceVideos: ["https://cdn.example.com/b.mp4"],
    });
    expect(request.references).toEqual({
      images: [IMG, IMG2],
      audios: [AUDIO, "https://cdn.example.com/b.mp3"],
      videos: [VIDEO, "https://cdn.example.com/b.mp4"],
      frameStart: null,
      frameEnd: null,
    });
  });

  it("returns empty references when none are given or all are null", async () => {
    const empty = { images: [], audios: [], videos: [], frameStart: null, frameEnd: null };
    expect((await video({})).references).toEqual(empty);
    const nulls = Object.fromEntries(
      ["reference_image", "reference_images", "reference_audio", "reference_audios", "reference_video", "reference_videos", "frame_start", "frame_end"].map(
        (field) => [toCamel(field), null],
      ),
    );
    expect((await video({ modelId: 39, ...nulls })).references).toEqual(empty);
    expect((await video({ modelId: 52, ...nulls })).references).toEqual(empty);
  });

  it("accepts first and last frames with reference images for model 39", async () => {
    const request = await video({ modelId: 39, referenceImages: [IMG], frameStart: IMG2, frameEnd: IMG });
    expect(request.references).toEqual({ images: [IMG], audios: [], videos: [], frameStart: IMG2, frameEnd: IMG });
  });

  it.each([52, 67, 69, 51])("rejects first and last frames for model %i", async (id) => {
    await expectInvalid(video({ modelId: id, frameStart: IMG }), unsupported("frame_start"), "frame_start");
    await expectInvalid(video({ modelId: id, frameEnd: IMG }), unsupported("frame_end"), "frame_end");
  });

  it.each(["reference_audio", "reference_video"])("rejects %s for model 39", async (field) => {
    await expectInvalid(video({ modelId: 39, referenceImage: IMG, [toCamel(field)]: AUDIO }), unsupported(field), field);
  });

  it.each(["reference_audios", "reference_videos"])("rejects a non-empty %s for model 39", async (field) => {
    await expectInvalid(video({ modelId: 39, referenceImage: IMG, [toCamel(field)]: [AUDIO] }), unsupported(field), field);
  });

  it("accepts empty audio and video lists for model 39", async () => {
    const request = await video({ modelId: 39, referenceAudios: [], referenceVideos: [] });
    expect(request.references.audios).toEqual([]);
  });

  it("ignores audio, video and frame fields on image requests, even invalid ones", async () => {
    const request = await image({
      referenceImage: IMG,
      referenceAudio: PRIVATE,
      referenceAudios: "not a list",
      referenceVideo: 5,
      referenceVideos: urls(20),
      frameStart: PRIVATE,
      frameEnd: 5,
    });
    expect(request.references).toEqual({ images: [IMG], audios: [], videos: [], frameStart: null, frameEnd: null });
  });

  it("accepts reference images on image requests", async () => {
    const request = await image({ referenceImage: IMG, referenceImages: [IMG2] });
    expect(request.references.images).toEqual([IMG, IMG2]);
  });
});

describe("references: wrong types", () => {
  it.each([
    ["reference_image", 5],
    ["reference_image", [IMG]],
    ["reference_images", IMG],
    ["reference_images", { 0: IMG }],
    ["reference_audio", 5],
    ["reference_audios", AUDIO],
    ["reference_video", true],
    ["reference_videos", VIDEO],
  ])("rejects %s = %j", async (field, value) => {
    await expectInvalid(video({ referenceImage: IMG, [toCamel(field)]: value }), unsupported(field), field);
  });

  it("rejects a non-string frame for model 39", async () => {
    await expectInvalid(video({ modelId: 39, frameStart: 5 }), unsupported("frame_start"), "frame_start");
    await expectInvalid(video({ modelId: 39, frameEnd: [IMG] }), unsupported("frame_end"), "frame_end");
  });

  it("rejects a non-string reference_image on image requests", async () => {
    await expectInvalid(image({ referenceImage: 5 }), unsupported("reference_image"), "reference_image");
    await expectInvalid(image({ referenceImages: IMG }), unsupported("reference_images"), "reference_images");
  });
});

describe("references: limits", () => {
  it.each([52, 69, 51])("accepts 9 images, 3 audios and 3 videos for model %i", async (id) => {
    const request = await video({
      modelId: id,
      referenceImages: urls(9),
      referenceAudios: urls(3, "https://cdn.example.com/a"),
      referenceVideos: urls(3, "https://cdn.example.com/v"),
    });
    expect(request.references.images).toHaveLength(9);
    expect(request.references.audios).toHaveLength(3);
    expect(request.references.videos).toHaveLength(3);
  });

  it.each([52, 69, 51, 39])("rejects 10 images for model %i", async (id) => {
    await expectInvalid(video({ modelId: id, referenceImages: urls(10) }), unsupported("reference_images"));
  });

  it("names the plural field when a singular image pushes the list over 9", async () => {
    await expectInvalid(video({ referenceImage: IMG, referenceImages: urls(9) }), unsupported("reference_images"), "reference_images");
  });

  it("rejects a fourth audio", async () => {
    await expectInvalid(
      video({ referenceImage: IMG, referenceAudios: urls(4, "https://cdn.example.com/a") }),
      unsupported("reference_audios"),
      "reference_audios",
    );
    await expectInvalid(
      video({ referenceImage: IMG, referenceAudio: AUDIO, referenceAudios: urls(3, "https://cdn.example.com/a") }),
      unsupported("reference_audios"),
    );
  });

  it("rejects a fourth video", async () => {
    await expectInvalid(video({ referenceVideos: urls(4, "https://cdn.example.com/v") }), unsupported("reference_videos"), "reference_videos");
  });

  it("accepts 9 images plus both frames for model 39", async () => {
    const request = await video({ modelId: 39, referenceImages: urls(9), frameStart: IMG, frameEnd: IMG2 });
    expect(request.references.images).toHaveLength(9);
  });

  it("has no per-kind limit for model 67, only 30 references in all", async () => {
    const request = await video({
      modelId: 67,
      referenceImages: urls(20),
      referenceAudios: urls(5, "https://cdn.example.com/a"),
      referenceVideos: urls(5, "https://cdn.example.com/v"),
    });
    expect(request.references.images).toHaveLength(20);
    expect((await video({ modelId: 67, referenceImages: urls(30) })).references.images).toHaveLength(30);
    expect((await video({ modelId: 67, referenceImage: IMG, referenceVideos: urls(29, "https://cdn.example.com/v") })).references.videos).toHaveLength(29);
  });

  it("rejects a 31st reference for model 67, naming the kind that crosses 30", async () => {
    await expectInvalid(video({ modelId: 67, referenceImages: urls(31) }), unsupported("reference_images"));
    await expectInvalid(
      video({ modelId: 67, referenceImages: urls(20), referenceAudios: urls(11, "https://cdn.example.com/a") }),
      unsupported("reference_audios"),
      "reference_audios",
    );
    await expectInvalid(
      video({
        modelId: 67,
        referenceImages: urls(20),
        referenceAudios: urls(5, "https://cdn.example.com/a"),
        referenceVideos: urls(6, "https://cdn.example.com/v"),
      }),
      unsupported("reference_videos"),
      "reference_videos",
    );
    await expectInvalid(video({ modelId: 67, referenceImages: urls(30), referenceVideo: VIDEO }), unsupported("reference_video"), "reference_video");
  });

  it("accepts 9 reference images on image requests and rejects 10", async () => {
    expect((await image({ referenceImages: urls(9) })).references.images).toHaveLength(9);
    await expectInvalid(image({ referenceImages: urls(10) }), unsupported("reference_images"), "reference_images");
    await expectInvalid(image({ referenceImage: IMG, referenceImages: urls(9) }), unsupported("reference_images"));
  });
});

describe("references: audio needs an image or a video", () => {
  it.each([52, 67, 69])("rejects audio alone for model %i", async (id) => {
    await expectInvalid(video({ modelId: id, referenceAudio: AUDIO }), unsupported("reference_audio"), "reference_audio");
    await expectInvalid(video({ modelId: id, referenceAudios: [AUDIO] }), unsupported("reference_audios"), "reference_audios");
  });

  it.each([52, 67, 69])("accepts audio with an image or with a video for model %i", async (id) => {
    expect((await video({ modelId: id, referenceAudio: AUDIO, referenceImage: IMG })).references.audios).toEqual([AUDIO]);
    expect((await video({ modelId: id, referenceAudios: [AUDIO], referenceVideos: [VIDEO] })).references.videos).toEqual([VIDEO]);
  });

  it("accepts audio alone for model 51", async () => {
    expect((await video({ modelId: 51, referenceAudio: AUDIO })).references.audios).toEqual([AUDIO]);
  });

  it("does not count empty image and video lists as visual references", async () => {
    await expectInvalid(video({ referenceAudio: AUDIO, referenceImages: [], referenceVideos: [] }), unsupported("reference_audio"));
  });
});

describe("references: public HTTPS URLs", () => {
  it.each([
    ["reference_image", { referenceImage: PRIVATE }],
    ["reference_images", { referenceImages: [IMG, PRIVATE] }],
    ["reference_audio", { referenceImage: IMG, referenceAudio: PRIVATE }],
    ["reference_audios", { referenceImage: IMG, referenceAudios: [PRIVATE] }],
    ["reference_video", { referenceVideo: PRIVATE }],
    ["reference_videos", { referenceVideos: [VIDEO, PRIVATE] }],
  ])("rejects a private URL in %s", async (field, fields) => {
    await expectInvalid(video(fields), notPublic(field), field);
  });

  it.each([
    ["frame_start", { frameStart: PRIVATE }],
    ["frame_end", { frameEnd: PRIVATE }],
  ])("rejects a private URL in %s for model 39", async (field, fields) => {
    await expectInvalid(video({ modelId: 39, ...fields }), notPublic(field), field);
  });

  it("rejects a private URL in reference images of image requests", async () => {
    await expectInvalid(image({ referenceImage: PRIVATE }), notPublic("reference_image"), "reference_image");
    await expectInvalid(image({ referenceImages: [PRIVATE] }), notPublic("reference_images"), "reference_images");
  });

  it("reports the first failing field in field order", async () => {
    await expectInvalid(video({ referenceImage: PRIVATE, referenceImages: [PRIVATE], referenceVideos: [PRIVATE] }), notPublic("reference_image"));
    await expectInvalid(video({ referenceImages: [PRIVATE], referenceAudio: PRIVATE, referenceVideo: PRIVATE }), notPublic("reference_images"));
    await expectInvalid(video({ modelId: 39, referenceImages: [PRIVATE], frameStart: PRIVATE, frameEnd: PRIVATE }), notPublic("reference_images"));
    await expectInvalid(video({ modelId: 39, frameStart: PRIVATE, frameEnd: PRIVATE }), notPublic("frame_start"));
    await expectInvalid(
      video({ referenceImage: IMG, referenceAudio: PRIVATE, referenceAudios: [PRIVATE], referenceVideos: [PRIVATE] }),
      notPublic("reference_audio"),
    );
    await expectInvalid(video({ referenceImage: IMG, referenceAudios: [PRIVATE], referenceVideo: PRIVATE }), notPublic("reference_audios"));
    await expectInvalid(video({ referenceVideo: PRIVATE, referenceVideos: [PRIVATE] }), notPublic("reference_video"));
  });

  it("reports the field order even when a later check fails first in time", async () => {
    // The later field's check answers at once, the earlier one's after a delay.
    const slowFirst: UrlCheck = (url) => new Promise((resolve) => setTimeout(() => resolve(false), url.includes("slow") ? 20 : 0));
    await expectInvalid(
      validate("video", { prompt: "a cat", referenceImage: "https://slow.example.com/a.png", referenceVideo: VIDEO }, slowFirst),
      notPublic("reference_image"),
    );
  });

  it.each([
    ["a number", 5],
    ["null", null],
    ["an object", { url: IMG }],
    ["an empty string", ""],
  ])("rejects a reference_images element that is %s", async (_name, element) => {
    await expectInvalid(video({ referenceImages: [IMG, element] }), notPublic("reference_images"), "reference_images");
  });

  it("rejects a URL longer than 2048 characters without asking the guard", async () => {
    const asked: string[] = [];
    const check: UrlCheck = async (url) => {
      asked.push(url);
      return true;
    };
    const base = "https://cdn.example.com/";
    const longest = base + "a".repeat(2048 - base.length);
    expect((await validate("video", { prompt: "a cat", referenceImage: longest }, check)).references.images).toEqual([longest]);
    await expectInvalid(validate("video", { prompt: "a cat", referenceImage: `${longest}a` }, check), notPublic("reference_image"), "reference_image");
    expect(asked).toEqual([longest]);
  });

  it("treats a guard that throws as a failed check", async () => {
    const broken: UrlCheck = async () => {
      throw new Error("DNS exploded");
    };
    await expectInvalid(validate("video", { prompt: "a cat", referenceImage: IMG }, broken), notPublic("reference_image"), "reference_image");
  });

  it("runs the URL checks concurrently", async () => {
    let inFlight = 0;
    let most = 0;
    const check: UrlCheck = async () => {
      inFlight++;
      most = Math.max(most, inFlight);
      await new Promise((resolve) => setTimeout(resolve, 10));
      inFlight--;
      return true;
    };
    await validate("video", { prompt: "a cat", referenceImages: [IMG, IMG2], referenceVideo: VIDEO }, check);
    expect(most).toBe(3);
  });

  it("checks every URL of the request", async () => {
    const asked: string[] = [];
    const check: UrlCheck = async (url) => {
      asked.push(url);
      return true;
    };
    await validate(
      "video",
      {
        prompt: "a cat",
        modelId: 39,
        referenceImage: IMG,
        referenceImages: [IMG2],
        frameStart: "https://f.example/s.png",
        frameEnd: "https://f.example/e.png",
      },
      check,
    );
    expect(asked.sort()).toEqual([IMG, IMG2, "https://f.example/e.png", "https://f.example/s.png"].sort());
  });

  it("does not ask the guard when an earlier rule fails", async () => {
    let asked = 0;
    const check: UrlCheck = async () => {
      asked++;
      return false;
    };
    await expectInvalid(validate("video", { prompt: "a cat", count: 5, referenceImage: IMG }, check), unsupported("count"));
    await expectInvalid(validate("video", { prompt: "a cat", modelId: 39, referenceAudio: PRIVATE }, check), unsupported("reference_audio"));
    expect(asked).toBe(0);
  });

  it("checks reference rules before URLs", async () => {
    await expectInvalid(video({ referenceImages: [...urls(9), PRIVATE] }), unsupported("reference_images"));
    await expectInvalid(video({ referenceAudio: PRIVATE }), unsupported("reference_audio"));
  });
});

describe("a complete request", () => {
  it("returns every field of a video request in canonical form", async () => {
    const request = await validate("video", {
      prompt: "a cat on a bike",
      modelId: 69,
      size: "16:9",
      seconds: 6,
      resolution: "1080p",
      count: 2,
      referenceImage: IMG,
      referenceAudios: [AUDIO],
    });
    expect(request).toEqual({
      kind: "video",
      modelId: 69,
      modelName: "video-69",
      prompt: "a cat on a bike",
      size: "16:9",
      seconds: 6,
      resolution: "1080P",
      count: 2,
      references: { images: [IMG], audios: [AUDIO], videos: [], frameStart: null, frameEnd: null },
    });
  });

  it("returns every field of an image request in canonical form", async () => {
    const request = await validate("image", { prompt: "a cat", modelId: 45, size: "4:5", resolution: "1K", count: 3, referenceImages: [IMG] });
    expect(request).toEqual({
      kind: "image",
      modelId: 45,
      modelName: "image-45",
      prompt: "a cat",
      size: "4:5",
      seconds: null,
      resolution: "1k",
      count: 3,
      references: { images: [IMG], audios: [], videos: [], frameStart: null, frameEnd: null },
    });
  });
});

describe("model catalog", () => {
  it("lists the six models of the spec in the order of its model_id message, which is derived from it", () => {
    expect(MODELS.map((model) => [model.id, model.kind])).toEqual([
      [52, "video"],
      [51, "video"],
      [67, "video"],
      [69, "video"],
      [39, "video"],
      [45, "image"],
    ]);
    expect(MODEL_ID_MESSAGE).toBe(`model_id must be one of: ${MODELS.map((model) => model.id).join(", ")}`);
  });

  it("knows no other model", () => {
    expect(getModel(53)).toBeUndefined();
    expect(getModel(45)?.name).toBe("image-45");
  });

  it("cannot be changed by a reader", () => {
    const model = getModel(52)!;
    expect(() => (model.sizes as string[]).push("5:5")).toThrow(TypeError);
    expect(() => {
      (model as { defaultSeconds: number | null }).defaultSeconds = 7;
    }).toThrow(TypeError);
    expect(getModel(52)!.defaultSeconds).toBe(5);
  });
});
