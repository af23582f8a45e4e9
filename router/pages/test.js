// @ts-check
// /test: the test bench. The form is built from the server's catalog (GraphQL `models`), the price
// preview is the server's own `quote`, and a submission is the user's GraphQL mutation with their
// key; test-tasks.js follows each submitted task live (`taskStatusChanged` over graphql-ws).
import { $, PageError, currentLang, gql, h, initLang, onLangChange, originalLine, setupKeyField, showError, t, yuan } from "./common.js";
import { showQuote } from "./test-price.js";
import { SUBMIT_IMAGE, SUBMIT_VIDEO, renderTasks, track } from "./test-tasks.js";

const MODEL_FIELDS = `id name kind sizes resolutions durations { resolution seconds } defaultSeconds maxCount available
  references { kinds frames maxImages maxAudios maxVideos maxTotal audioNeedsVisual }`;
const MODELS = `query PageModels { models { ${MODEL_FIELDS} } }`;
const BALANCE = `query PageBalance { viewer { balance { amount } } }`;

const form = $("form", HTMLFormElement);
const keyInput = $("key", HTMLInputElement);
const modelSelect = $("model", HTMLSelectElement);
const resolutionSelect = $("resolution", HTMLSelectElement);
const secondsSelect = $("seconds", HTMLSelectElement);
const sizeSelect = $("size", HTMLSelectElement);
const countSelect = $("count", HTMLSelectElement);
const generateButton = $("generate", HTMLButtonElement);
const formError = $("form-error");
const announce = $("announce");

/** Reference inputs: REST field, GraphQL input field, the model's limit field, label key. */
const REFERENCE_LISTS = [
  { field: "reference_images", input: "referenceImages", kind: "image", max: "maxImages", label: "refs.image" },
  { field: "reference_audios", input: "referenceAudios", kind: "audio", max: "maxAudios", label: "refs.audio" },
  { field: "reference_videos", input: "referenceVideos", kind: "video", max: "maxVideos", label: "refs.video" },
];
const FRAMES = [
  { field: "frame_start", input: "frameStart" },
  { field: "frame_end", input: "frameEnd" },
];

/** @type {Map<number, any>} the catalog, by model id */
let models = new Map();

initLang("title.test");
setupKeyField(keyInput, $("remember", HTMLInputElement));

// ---------------------------------------------------------------------------------------------
// The model-driven form

/**
 * A node of a page document (its fields are the document's; the documents are checked against
 * the schema by the trusted-documents check, not here): a model of PageModels.
 * @typedef {Record<string, any>} GraphRow
 */

/**
 * Replaces a select's options, keeping `keep` selected when it is still allowed.
 * @template {string | number} V
 * @param {HTMLSelectElement} select
 * @param {V[]} values
 * @param {unknown} keep
 * @param {(v: V) => string} [label]
 */
function setOptions(select, values, keep, label = (v) => String(v)) {
  const wanted = values.map(String).includes(String(keep)) ? String(keep) : undefined;
  select.replaceChildren(...values.map((value) => h("option", { value: String(value), textContent: label(value) })));
  if (wanted !== undefined) select.value = wanted;
  return select.value;
}

const currentModel = () => models.get(Number(modelSelect.value));

function renderModelOptions() {
  const keep = modelSelect.value;
  modelSelect.replaceChildren(
    ...[...models.values()].map((model) =>
      h("option", {
        value: String(model.id),
        disabled: !model.available,
        textContent: `${model.id} · ${model.name} (${t(model.kind === "IMAGE" ? "model.image" : "model.video")})${model.available ? "" : ` — ${t("model.unavailable")}`}`,
      }),
    ),
  );
  if (keep && models.has(Number(keep))) modelSelect.value = keep;
}

/**
 * Durations allowed at the chosen resolution.
 * @param {GraphRow} model
 * @param {string} resolution
 * @returns {number[]}
 */
function durationsFor(model, resolution) {
  return model.durations.find((/** @type {GraphRow} */ d) => d.resolution === resolution)?.seconds ?? [];
}

/** @param {GraphRow} model */
function renderSeconds(model) {
  const allowed = durationsFor(model, resolutionSelect.value);
  const keep = allowed.includes(Number(secondsSelect.value)) ? secondsSelect.value : model.defaultSeconds;
  setOptions(secondsSelect, allowed, keep);
}

/** @param {GraphRow} model */
function renderReferences(model) {
  const refs = model.references;
  for (const list of REFERENCE_LISTS) {
    const box = /** @type {HTMLElement} */ (form.querySelector(`[data-field="${list.field}"]`));
    const max = refs[list.max];
    box.hidden = !refs.kinds.includes(list.kind) || max === 0;
    $(`${list.field}-hint`).textContent = [t("refs.onePerLine"), max ? t("refs.max", { n: max }) : ""].filter(Boolean).join(currentLang() === "zh" ? "" : " ");
  }
  for (const frame of FRAMES) /** @type {HTMLElement} */ (form.querySelector(`[data-field="${frame.field}"]`)).hidden = !refs.frames;
  const rules = [];
  if (refs.maxTotal) rules.push(t("refs.total", { n: refs.maxTotal }));
  if (refs.audioNeedsVisual && refs.kinds.includes("audio")) rules.push(t("refs.audioNeedsVisual"));
  $("refs-rules").textContent = rules.join(currentLang() === "zh" ? "" : " ");
  $("refs-rules").hidden = rules.length === 0;
}

/** Renders every model-dependent field for the chosen model, keeping what is still allowed. */
function renderForm() {
  const model = currentModel();
  if (!model) return;
  const video = model.kind === "VIDEO";
  setOptions(resolutionSelect, model.resolutions, resolutionSelect.value || model.resolutions[0]);
  $("seconds-field").hidden = !video;
  if (video) renderSeconds(model);
  const keepSize = sizeSelect.value;
  sizeSelect.replaceChildren(
    h("option", { value: "", textContent: t("size.default") }),
    ...model.sizes.map((/** @type {string} */ size) => h("option", { value: size, textContent: size })),
  );
  if (model.sizes.includes(keepSize)) sizeSelect.value = keepSize;
  setOptions(
    countSelect,
    Array.from({ length: model.maxCount }, (_, i) => i + 1),
    countSelect.value || 1,
  );
  $("count-hint").textContent = t(video ? "count.hint.video" : "count.hint.image");
  renderReferences(model);
  updatePrice();
}

// ---------------------------------------------------------------------------------------------
// The price preview (test-price.js) follows the form

/** Shows the server's quote for the form's current values. */
function updatePrice() {
  const model = currentModel();
  if (model) showQuote(model, { resolution: resolutionSelect.value, count: Number(countSelect.value), seconds: Number(secondsSelect.value) });
}

modelSelect.addEventListener("change", () => {
  clearErrors();
  const url = new URL(location.href);
  url.searchParams.set("model", modelSelect.value);
  history.replaceState(null, "", url);
  renderForm();
});
resolutionSelect.addEventListener("change", () => {
  const model = currentModel();
  if (model?.kind === "VIDEO") renderSeconds(model);
  updatePrice();
});
secondsSelect.addEventListener("change", updatePrice);
countSelect.addEventListener("change", updatePrice);

// ---------------------------------------------------------------------------------------------
// Balance line next to the key

let balanceSeq = 0;

async function refreshBalance() {
  const key = keyInput.value.trim();
  const line = $("balance-line");
  const seq = ++balanceSeq;
  if (!key) {
    line.hidden = true;
    return;
  }
  try {
    const data = await gql(BALANCE, {}, key);
    if (seq !== balanceSeq) return;
    line.replaceChildren(t("balance.colon"), h("strong", { textContent: yuan(data.viewer?.balance) }));
    line.dataset.amount = data.viewer?.balance?.amount ?? "";
    line.hidden = false;
    setFieldError("key", null);
  } catch (error) {
    if (seq !== balanceSeq) return;
    line.hidden = true;
    if (error instanceof PageError && (error.code === "unauthorized" || error.code === "key_disabled")) setFieldError("key", error.text);
  }
}
keyInput.addEventListener("change", refreshBalance);

// ---------------------------------------------------------------------------------------------
// Errors shown inline

/**
 * Shows (or, with no text, clears) a field's inline error; false when the page has no such field.
 * @param {string} field
 * @param {string | null | undefined} text
 * @param {string | null} [original] the service's own wording, shown below a translated text
 */
function setFieldError(field, text, original = "") {
  const box = $(`${field}-error`);
  const control = field === "key" ? keyInput : field === "model_id" ? modelSelect : $(field);
  if (!box || !control) return false;
  box.replaceChildren(text ?? "");
  const line = text ? originalLine(original) : null;
  if (line) box.append(line);
  box.hidden = !text;
  if (text) control.setAttribute("aria-invalid", "true");
  else control.removeAttribute("aria-invalid");
  return true;
}

function clearErrors() {
  for (const box of /** @type {NodeListOf<HTMLElement>} */ (form.querySelectorAll(".field-error"))) {
    box.hidden = true;
    box.textContent = "";
  }
  for (const control of form.querySelectorAll("[aria-invalid]")) control.removeAttribute("aria-invalid");
  showError(formError, null);
}

/**
 * The field of a server error (`reference_images[2]` → `reference_images`).
 * @param {{ field?: string }} error
 */
function fieldOf(error) {
  const field = error.field?.replace(/\[.*$/, "").replace(/\..*$/, "");
  if (!field) return undefined;
  if (field === "reference_image") return "reference_images";
  if (field === "reference_audio") return "reference_audios";
  if (field === "reference_video") return "reference_videos";
  return field;
}

/**
 * Shows a submission error next to its field (or the key) and in the form's alert.
 * @param {PageError} error
 */
function showSubmitError(error) {
  showError(formError, error);
  let focus = null;
  if (error.code === "unauthorized" || error.code === "key_disabled") {
    setFieldError("key", error.text);
    focus = keyInput;
  } else {
    const field = fieldOf(error);
    if (field && setFieldError(field, error.text, error.detail)) {
      focus = field === "model_id" ? modelSelect : $(field);
      if (field.startsWith("reference_") || field.startsWith("frame_")) $("refs", HTMLDetailsElement).open = true;
    }
  }
  focus?.focus();
}

// ---------------------------------------------------------------------------------------------
// Submission

const lines = (/** @type {string} */ id) =>
  $(id, HTMLTextAreaElement)
    .value.split(/\s+/)
    .map((s) => s.trim())
    .filter(Boolean);

/**
 * Checks what the page can check by itself; the server checks everything again.
 * @param {GraphRow} model
 * @returns {{ field: string, text: string }[]}
 */
function localErrors(model) {
  const errors = [];
  if (!keyInput.value.trim()) errors.push({ field: "key", text: t("err.key.required") });
  if (!$("prompt", HTMLTextAreaElement).value.trim()) errors.push({ field: "prompt", text: t("err.prompt.required") });
  let total = 0;
  for (const list of REFERENCE_LISTS) {
    const box = /** @type {HTMLElement} */ (form.querySelector(`[data-field="${list.field}"]`));
    if (box.hidden) continue;
    const n = lines(list.field).length;
    total += n;
    const max = model.references[list.max];
    if (max && n > max) errors.push({ field: list.field, text: t("refs.tooMany", { field: t(list.label), n: max }) });
  }
  if (model.references.maxTotal && total > model.references.maxTotal) {
    errors.push({ field: "reference_images", text: t("refs.totalTooMany", { n: model.references.maxTotal }) });
  }
  return errors;
}

/** @param {GraphRow} model */
function buildInput(model) {
  /** @type {{ prompt: string, modelId: number, resolution: string, count: number, seconds?: number, size?: string, [list: string]: unknown }} */
  const input = { prompt: $("prompt", HTMLTextAreaElement).value, modelId: model.id, resolution: resolutionSelect.value, count: Number(countSelect.value) };
  if (model.kind === "VIDEO") input.seconds = Number(secondsSelect.value);
  if (sizeSelect.value) input.size = sizeSelect.value;
  for (const list of REFERENCE_LISTS) {
    if (/** @type {HTMLElement} */ (form.querySelector(`[data-field="${list.field}"]`)).hidden) continue;
    const urls = lines(list.field);
    if (urls.length) input[list.input] = urls;
  }
  if (model.references.frames) {
    for (const frame of FRAMES) {
      const value = $(frame.field, HTMLInputElement).value.trim();
      if (value) input[frame.input] = value;
    }
  }
  return input;
}

let submitting = false;

form.addEventListener("submit", async (event) => {
  event.preventDefault();
  if (submitting) return;
  clearErrors();
  const model = currentModel();
  if (!model) return;
  const problems = localErrors(model);
  if (problems.length) {
    for (const problem of problems) setFieldError(problem.field, problem.text);
    if (problems.some((p) => p.field.startsWith("reference_"))) $("refs", HTMLDetailsElement).open = true;
    (problems[0].field === "key" ? keyInput : $(problems[0].field)).focus();
    return;
  }
  submitting = true;
  generateButton.disabled = true;
  generateButton.setAttribute("aria-busy", "true");
  generateButton.textContent = t("generating");
  const key = keyInput.value.trim();
  try {
    const video = model.kind === "VIDEO";
    const data = await gql(video ? SUBMIT_VIDEO : SUBMIT_IMAGE, { input: buildInput(model) }, key);
    const task = (video ? data.submitVideoGeneration : data.submitImageGeneration).task;
    track(task, key, refreshBalance);
    refreshBalance();
  } catch (error) {
    showSubmitError(error instanceof PageError ? error : new PageError({ code: "unknown", status: 0, message: String(error) }));
    if (error instanceof PageError && error.code === "insufficient_balance") refreshBalance();
  } finally {
    submitting = false;
    generateButton.disabled = false;
    generateButton.removeAttribute("aria-busy");
    generateButton.textContent = t("generate");
  }
});

// ---------------------------------------------------------------------------------------------
// Start

onLangChange(() => {
  announce.textContent = ""; // an announcement in the other language is stale
  renderModelOptions();
  renderForm();
  renderTasks();
  generateButton.textContent = t(submitting ? "generating" : "generate");
  if (!$("balance-line").hidden) refreshBalance();
});

async function start() {
  try {
    const data = await gql(MODELS);
    models = new Map(data.models.map((/** @type {GraphRow} */ model) => [model.id, model]));
  } catch (error) {
    showError(formError, error instanceof PageError ? error : new PageError({ code: "unknown", status: 0, message: "" }));
    return;
  }
  renderModelOptions();
  const wanted = Number(new URL(location.href).searchParams.get("model"));
  const first = models.get(wanted)?.available ? wanted : [...models.values()].find((m) => m.available)?.id;
  if (first !== undefined) modelSelect.value = String(first);
  renderForm();
  if (keyInput.value.trim()) refreshBalance();
  form.dataset.ready = "true";
}

start();
