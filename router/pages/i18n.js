// @ts-check
// Labels and messages of the two pages, English and Chinese. The page's first language is the one
// the router negotiated from Accept-Language (<html lang>); the switch in the header overrides it
// and is remembered in localStorage (a preference, not a secret).

import { en } from "./i18n-en.js";
import { zh } from "./i18n-zh.js";

/** @type {Record<"en" | "zh", Record<string, string | undefined>>} */
export const messages = { en, zh };

/**
 * The failure reasons the service writes on a task (`Task.error`, always English), each with the
 * message key of its wording in the pages' languages. A reason not listed here (a provider's own
 * text) is shown as "task.errorOther" with the original text on a second line.
 * @type {Record<string, string | undefined>}
 */
export const TASK_ERRORS = {
  "Simulated generation failure (#fail)": "task.error.simulated",
  "Generation timed out": "task.error.deadline",
  "Upstream request timed out": "task.error.upstreamTimeout",
  "Upstream request failed": "task.error.upstreamFailed",
  "Upstream returned no images": "task.error.noImages",
  "Upstream returned no result": "task.error.noResult",
  "Generation failed": "task.error.failed",
};

/**
 * Labels (message keys) of the request fields named in the service's validation messages.
 * @type {Record<string, string | undefined>}
 */
export const FIELD_LABELS = {
  prompt: "prompt.label",
  model_id: "model.label",
  resolution: "resolution.label",
  seconds: "seconds.label",
  size: "size.label",
  count: "count.label",
  reference_image: "refs.image",
  reference_images: "refs.image",
  reference_audio: "refs.audio",
  reference_audios: "refs.audio",
  reference_video: "refs.video",
  reference_videos: "refs.video",
  frame_start: "refs.frameStart",
  frame_end: "refs.frameEnd",
};
