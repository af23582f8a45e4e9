/**
 * Every request and answer of the generation REST surface (`/api/v1/*`, `/health`; docs/api/generation.md
 * §2-8, docs/architecture.md §4 and §8), described once: the shim checks bodies with these shapes
 * (router/rest/generation.ts), its answers are typed by them, and the OpenAPI document is generated
 * from them (router/openapi/generation.ts).
 *
 * Values come from the catalog (src/generation/catalog.ts) and the validator's constants, never
 * written out. The model-dependent rules (which sizes, seconds and references a model takes) are
 * the service's (src/generation/validation.ts): it checks them in the order the spec's messages
 * imply, for GraphQL and REST alike.
 */
import { invalidFieldError, validationMessages } from "../../../src/errors.ts";
import { DEFAULT_VIDEO_MODEL_ID, IMAGE_MODEL_ID, MODEL_IDS, MODELS, VIDEO_MODEL_IDS } from "../../../src/generation/catalog.ts";
import { MAX_PROMPT_CODE_POINTS } from "../../../src/generation/validation.ts";
import { moneySchema, dateTime } from "./common.ts";
import { int, int32, z } from "./zod.ts";

/**
 * docs/api/generation.md §7 for a body's JSON type errors: a whole field of the wrong type "{field}
 * has an unsupported value" (`prompt`, `model_id` keep their own messages), a bad item of a URL
 * list "{field} must be a public HTTPS URL".
 */
export const generationErrorMap: z.ZodErrorMap = (issue) => {
  const field = issue.path.filter((part) => typeof part === "string").join(".");
  const item = issue.path.some((part) => typeof part === "number");
  return { message: item ? validationMessages.publicUrl(field) : invalidFieldError(field).message };
};

const video = MODELS.filter((model) => model.kind === "video");
const image = MODELS.find((model) => model.id === IMAGE_MODEL_ID)!;
/** `a, b or c`. */
const listed = (values: string[]) => `${values.slice(0, -1).join(", ")} or ${values.at(-1)}`;
const unique = <T>(values: T[]) => [...new Set(values)];
const videoSeconds = video.flatMap((model) => Object.values(model.durations ?? {}).flat());
const videoResolutions = unique(video.flatMap((model) => model.resolutions.map((r) => Number.parseInt(r, 10)))).sort((a, b) => a - b);
const maxCount = Math.max(...MODELS.map((model) => model.maxCount));
/** Most references one video request may carry (model 67's total, or a kind's own limit). */
const maxVideoReferences = Math.max(...video.flatMap((model) => [model.references.maxTotal ?? 0, model.references.maxImages ?? 0]));

/** A prompt: JSON Schema's maxLength counts code points too, not UTF-16 units. */
const prompt = (what: string) =>
  z.string().openapi({
    minLength: 1,
    maxLength: MAX_PROMPT_CODE_POINTS,
    pattern: "\\S",
    description: `Description of the ${what}: at least one visible character (white space and invisible characters such as U+200B, U+2060, U+FEFF, U+00AD do not count), at most ${MAX_PROMPT_CODE_POINTS} Unicode code points (an emoji counts once), no U+0000. Otherwise 400 \`prompt must be a non-empty string\`.`,
  });

/** A public HTTPS URL (docs/api/generation.md §4 rule 3). */
export const PublicHttpsUrl = z.string().url().max(2048).startsWith("https://").openapi("PublicHttpsUrl", {
  pattern: "^https://",
  description:
    "A public HTTPS URL: no credentials, not localhost, no private or local IP address, and no host whose DNS answer is one. Otherwise 400 `{field} must be a public HTTPS URL`.",
});

const url = (description: string) => PublicHttpsUrl.optional().openapi({ description });
const urls = (description: string, maxItems: number) => z.array(PublicHttpsUrl).max(maxItems).optional().openapi({ description });
const count = (description: string) => int32(int().min(1).max(maxCount)).optional().openapi({ default: 1, description });

/** Body of `POST /api/v1/video/generations`, in the GraphQL input's field order (the order type errors are found in). */
export const VideoGenerationRequest = z
  .object({
    prompt: prompt("video"),
    model_id: int32(int())
      .optional()
      .openapi({ enum: [...VIDEO_MODEL_IDS], default: DEFAULT_VIDEO_MODEL_ID, description: `${VIDEO_MODEL_IDS.join(", ")}.` }),
    resolution: z
      .string()
      .regex(new RegExp(`^(?:${videoResolutions.join("|")})[Pp]$`))
      .optional()
      .openapi({ description: `${listed(videoResolutions.map((r) => `${r}P`))} as the model allows, any case; default the model's lowest.` }),
    seconds: int32(
      int()
        .min(Math.min(...videoSeconds))
        .max(Math.max(...videoSeconds)),
    )
      .optional()
      .openapi({ description: "Duration allowed by the model at the resolution; default the model's (52, 67, 39: 5; 69, 51: 4)." }),
    size: z
      .enum(unique(video.flatMap((model) => model.sizes)) as [string, ...string[]])
      .optional()
      .openapi({ description: "Aspect ratio allowed by the model; omitted: not sent upstream." }),
    count: count("Videos to generate; the price is multiplied by it."),
    reference_image: url("One reference image."),
    reference_images: urls("Reference images: at most 9 (model 67: images, audios and videos together at most 30).", maxVideoReferences),
    frame_start: url("First-frame image; model 39 only."),
    frame_end: url("Last-frame image; model 39 only."),
    reference_audio: url("One reference audio; models 52, 67, 69, 51. Models 52, 67 and 69 need an image or a video with it."),
    reference_audios: urls("Reference audios: at most 3 (model 67: see reference_images); models 52, 67, 69, 51.", maxVideoReferences),
    reference_video: url("One reference video; models 52, 67, 69, 51."),
    reference_videos: urls("Reference videos: at most 3 (model 67: see reference_images); models 52, 67, 69, 51.", maxVideoReferences),
  })
  .openapi("VideoGenerationRequest", {
    description:
      "Body of `POST /api/v1/video/generations` (docs/api/generation.md §2). Allowed `size`, `seconds` and `resolution` depend on the model (see `/health`); " +
      "a value the model does not support is 400 `{field} has an unsupported value`. Unknown fields are ignored.",
  });

/** Body of `POST /api/v1/images/generations`, in the GraphQL input's field order. */
export const ImageGenerationRequest = z
  .object({
    prompt: prompt("image"),
    model_id: int32(int()).openapi({ enum: [IMAGE_MODEL_ID], description: `Always ${IMAGE_MODEL_ID}.` }),
    resolution: z
      .string()
      .regex(new RegExp(`^${image.resolutions.map((r) => r.replace(/[Kk]$/, "")).join("|")}[Kk]$`))
      .optional()
      .openapi({ description: "Only 1k (any case)." }),
    size: z
      .enum(image.sizes as [string, ...string[]])
      .optional()
      .openapi({ description: "Aspect ratio, or auto." }),
    count: count("Images to generate; billed for the images actually generated."),
    reference_image: url("One reference image."),
    reference_images: urls("Reference images; with reference_image at most 9.", image.references.maxImages ?? 0),
  })
  .openapi("ImageGenerationRequest", { description: "Body of `POST /api/v1/images/generations` (docs/api/generation.md §2). Unknown fields are ignored." });

/** A model id of the catalog. */
const modelId = () => int().openapi({ enum: [...MODEL_IDS] });
const kind = () => z.enum(["video", "image"]);
/** Money on REST, by reference, with a description of its own. */
const money = (description?: string) => (description ? moneySchema.openapi({ description }) : moneySchema);
/** A success body: `{"code": 200, "data": …}`. */
const answer = <T extends z.ZodTypeAny>(name: string, data: T) =>
  z
    .object({ code: z.literal(200), data })
    .strict()
    .openapi(name);

/** The task just submitted (docs/architecture.md §8). */
export const Submission = z
  .object({
    task_id: z.string().min(1).openapi({ description: "Id to poll `GET /api/v1/tasks/{task_id}` with." }),
    model_id: modelId(),
    model_name: z.string(),
    status: z.literal(0).openapi({ description: "0: waiting." }),
    status_name: z.string().openapi({ description: "Localized label of the status." }),
    amount: money("Yuan debited now."),
  })
  .strict()
  .openapi("Submission", { description: "The task just submitted (docs/architecture.md §8)." });

/** A generation task (docs/api/generation.md §2-3; docs/architecture.md §8). */
export const Task = z
  .object({
    task_id: z.string().min(1),
    model_id: modelId(),
    model_name: z.string(),
    kind: kind(),
    status: int().openapi({ enum: [0, 1, 2, 3, 4], description: "0 waiting, 1 succeeded, 2 failed, 3 processing, 4 submitted or syncing assets." }),
    status_name: z.string().openapi({ description: "Localized label of the status (Chinese, or English for `Accept-Language: en`)." }),
    result: z.string().url().nullable().openapi({ description: "Result address when status is 1, else null." }),
    images: z.array(z.string().url()).nullable().openapi({ description: "Every generated image of an image task with status 1, else null." }),
    error: z.string().nullable().openapi({ description: "Failure reason when status is 2, else null." }),
    amount: money("What the task costs in the end: price − refunded."),
    price: money("Yuan debited at submission."),
    refunded: money("Yuan refunded (failure, or images not generated)."),
    created_at: dateTime,
    updated_at: dateTime,
  })
  .strict()
  .openapi("Task", { description: "A generation task (docs/api/generation.md §2-3; docs/architecture.md §8)." });

/** One recent request of the key. */
export const RequestRecord = z
  .object({ method: z.string(), path: z.string(), status: int().openapi({ description: "HTTP status answered." }), at: dateTime })
  .strict()
  .openapi("RequestRecord", { description: "One recent request of the key." });

/** Usage of the calling key (docs/architecture.md §8). */
export const Usage = z
  .object({
    balance: money(),
    spent: money("What the key's generation tasks took from the account's balance, minus refunds; cloud orders (customer wallets) are not included."),
    billed_seconds: int().min(0).openapi({ description: "Seconds × count over video tasks not refunded." }),
    billed_images: int().min(0).openapi({ description: "Images charged after settlement." }),
    tasks: z.array(Task).openapi({ description: "Newest first, at most `limit`." }),
    recent_requests: z.array(RequestRecord).openapi({ description: "Newest first, at most `limit`." }),
  })
  .strict()
  .openapi("Usage", { description: "Usage of the calling key (docs/architecture.md §8). The balance belongs to the key's account." });

/** `nullable` integer at least 0, with a description. */
const limit = (description?: string) =>
  int()
    .min(0)
    .nullable()
    .openapi(description ? { description } : {});

/** A model and what it accepts (docs/api/generation.md §1, §2 and §8), as `/health` lists it. */
export const Model = z
  .object({
    model_id: modelId(),
    model_name: z.string(),
    kind: kind(),
    sizes: z.array(z.string()),
    resolutions: z.array(z.string()),
    durations: z.record(z.array(int().min(1))).openapi({ description: "Allowed seconds per resolution; empty for images." }),
    default_seconds: int().nullable().openapi({ description: "Seconds used when a video request omits them; null for images." }),
    max_count: int().min(1),
    references: z
      .object({
        kinds: z.array(z.enum(["image", "audio", "video"])),
        frames: z.boolean().openapi({ description: "Whether frame_start and frame_end are accepted." }),
        max_images: limit("null: only max_total applies."),
        max_audios: limit(),
        max_videos: limit(),
        max_total: limit("Images, audios and videos together; null: only the per-kind limits apply."),
        audio_needs_image_or_video: z.boolean(),
      })
      .strict(),
  })
  .strict()
  .openapi("Model", { description: "A model and what it accepts (docs/api/generation.md §1, §2 and §8)." });

/** Each subgraph's readiness. */
export const SubgraphStates = z.record(z.enum(["ok", "unavailable"])).openapi("SubgraphStates", { description: "Each subgraph's readiness." });

/** `GET /health` when ready. */
export const Health = z
  .object({
    status: z.literal("ok"),
    subgraphs: SubgraphStates,
    models: z.array(Model).openapi({ description: "The models currently available." }),
  })
  .strict()
  .openapi("Health");

/** `GET /health` when not ready: no models. */
export const HealthUnavailable = z
  .object({ status: z.literal("unavailable"), subgraphs: SubgraphStates, models: z.array(Model).max(0).openapi({ description: "Always empty." }) })
  .strict()
  .openapi("HealthUnavailable");

/** The success bodies. */
export const SubmissionAnswer = answer("SubmissionAnswer", Submission);
export const TaskAnswer = answer("TaskAnswer", Task);
export const UsageAnswer = answer("UsageAnswer", Usage);

/** Error body (docs/architecture.md §4): `code` repeats the HTTP status; `message` is the spec's text. */
export const GenerationError = z
  .object({ code: int().min(400).max(599), message: z.string().min(1) })
  .strict()
  .openapi("Error", { description: "Error body (docs/architecture.md §4): `code` repeats the HTTP status; `message` is the spec's text." });

/** A REST task body as {@link Task} describes it. */
export type RestTask = z.infer<typeof Task>;
/** A usage body. */
export type RestUsage = z.infer<typeof Usage>;
/** A submission body. */
export type RestSubmission = z.infer<typeof Submission>;
/** A model as `/health` lists it. */
export type RestModel = z.infer<typeof Model>;
