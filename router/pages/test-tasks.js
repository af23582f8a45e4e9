// @ts-check
// /test's task list: each submitted task followed live over graphql-ws (`taskStatusChanged`, every
// task on the page's one WebSocket) or every 3 s from `task(id)` while that socket is down, and
// shown with its status history, price and results. The fields a task is shown with are also what
// the page's submission mutations return, so those documents are here too.
import { $, PageError, currentLang, gql, h, originalLine, safeUrls, t, taskFailure, yuan } from "./common.js";
import { subscribe } from "./live.js";

const TASK_FIELDS = `id status result images error price { amount } refunded { amount } charged { amount }
  count seconds resolution size createdAt updatedAt model { id name kind }`;
export const SUBMIT_VIDEO = `mutation PageSubmitVideo($input: SubmitVideoGenerationInput!) { submitVideoGeneration(input: $input) { task { ${TASK_FIELDS} } } }`;
export const SUBMIT_IMAGE = `mutation PageSubmitImage($input: SubmitImageGenerationInput!) { submitImageGeneration(input: $input) { task { ${TASK_FIELDS} } } }`;
const WATCH = `subscription PageWatchTask($id: ID!) { taskStatusChanged(taskId: $id) { ${TASK_FIELDS} } }`;
const TASK = `query PageTask($id: ID!) { task(id: $id) { ${TASK_FIELDS} } }`;
const TERMINAL = new Set(["SUCCEEDED", "FAILED"]);
const POLL_MS = 3000;

const announce = $("announce");
/** @type {Map<string, Entry>} */
const tasks = new Map();

/**
 * A node of a page document (its fields are the document's; the documents are checked against
 * the schema by the trusted-documents check, not here): a task.
 * @typedef {Record<string, any>} GraphRow
 */
/**
 * A task followed on the page: its last state, the statuses seen, a note, the last error, and
 * the function that stops following it.
 * @typedef {{ task: GraphRow, history: { status: string, at: Date }[], note: string, error: PageError | null, stop: () => void }} Entry
 */

// ---------------------------------------------------------------------------------------------
// Following a task

/**
 * Records a task state; returns true when its status changed.
 * @param {Entry} entry
 * @param {GraphRow} task
 */
function record(entry, task) {
  const last = entry.history.at(-1);
  entry.task = task;
  if (last?.status === task.status) return false;
  entry.history.push({ status: task.status, at: new Date() });
  return true;
}

/**
 * Follows a submitted task live (polling while the live connection is down).
 * @param {GraphRow} task
 * @param {string} key
 * @param {() => void} onSettled called when the task succeeds or fails (the balance has changed)
 */
export function track(task, key, onSettled) {
  /** @type {Entry} */
  const entry = { task, history: [], note: "", error: null, stop: () => {} };
  record(entry, task);
  tasks.set(task.id, entry);
  render(entry);
  say(entry);

  const onTask = (/** @type {GraphRow | null} */ next) => {
    if (!next) return;
    if (record(entry, next)) say(entry);
    render(entry);
    if (TERMINAL.has(next.status)) onSettled();
  };
  // Polling every 3 s while the live connection is down (spec: poll when there is no socket),
  // stopped when it is back.
  /** @type {ReturnType<typeof setTimeout> | undefined} */
  let polling;
  const poll = async () => {
    polling = undefined;
    try {
      const data = await gql(TASK, { id: task.id }, key);
      onTask(data.task);
    } catch {
      /* try again next round */
    }
    if (entry.note && !TERMINAL.has(entry.task.status)) polling = setTimeout(poll, POLL_MS);
  };
  const startPolling = () => {
    if (TERMINAL.has(entry.task.status) || entry.note) return;
    entry.note = "task.polling";
    render(entry);
    clearTimeout(polling);
    polling = setTimeout(poll, 0);
  };
  entry.stop = subscribe(
    key,
    WATCH,
    { id: task.id },
    {
      next: (data) => onTask(data?.taskStatusChanged),
      complete: () => {},
      disconnected: startPolling,
      // Back on the socket: graphql-ws subscribes again, and the server's first event is the task as it is now.
      connected: () => {
        if (!entry.note) return;
        clearTimeout(polling);
        polling = undefined;
        entry.note = "";
        render(entry);
      },
      error: (error) => {
        if (TERMINAL.has(entry.task.status)) return;
        if (error instanceof PageError) {
          entry.error = error;
          render(entry);
          return;
        }
        // The socket cannot be used at all (a proxy without WebSockets): poll until the task ends.
        startPolling();
      },
    },
  );
  window.addEventListener("pagehide", () => {
    entry.stop();
    clearTimeout(polling);
  });
}

/**
 * A time of day with seconds, in the page's language.
 * @param {Date} date
 */
function clock(date) {
  return date.toLocaleTimeString(currentLang() === "zh" ? "zh-CN" : "en-GB", { hour: "2-digit", minute: "2-digit", second: "2-digit" });
}

/** @param {Entry} entry */
function say(entry) {
  announce.textContent = t("status.announce", { id: entry.task.id, status: t(`status.${entry.task.status}`) });
}

function aiMark() {
  return h("span", { className: "ai-mark", textContent: t("ai.mark") });
}

/** @param {GraphRow} task */
function describe(task) {
  const parts = [];
  if (task.resolution) parts.push(task.resolution);
  if (task.seconds) parts.push(t("unit.seconds", { n: task.seconds }));
  if (task.size) parts.push(task.size);
  parts.push(`× ${task.count}`);
  return parts.join(" · ");
}

/** @param {GraphRow} task */
function resultsOf(task) {
  if (task.status !== "SUCCEEDED") return null;
  if (task.model.kind === "IMAGE") {
    const images = safeUrls(task.images?.length ? task.images : [task.result]);
    return h(
      "ul",
      { className: "grid", attrs: { "aria-label": t("results.heading") } },
      images.map((url, i) =>
        h(
          "li",
          {},
          h(
            "figure",
            { className: "result" },
            h(
              "div",
              { className: "media" },
              h("img", { src: url, alt: t("task.image", { n: i + 1, id: task.id }), loading: "lazy", width: 512, height: 512 }),
              aiMark(),
            ),
            h("figcaption", {}, h("a", { href: url, download: "", textContent: t("task.downloadN", { n: i + 1 }) })),
          ),
        ),
      ),
    );
  }
  const [url] = safeUrls([task.result]);
  if (!url) return null;
  return h(
    "figure",
    { className: "result video" },
    h(
      "div",
      { className: "media" },
      h("video", { src: url, controls: true, preload: "metadata", playsInline: true, attrs: { "aria-label": t("task.video", { id: task.id }) } }),
      aiMark(),
    ),
    h("figcaption", {}, h("a", { href: url, download: "", textContent: t("task.download") })),
  );
}

/**
 * Why a task failed, in the page's language (the service's own words below when they are not known).
 * @param {GraphRow} task
 */
function failureNote(task) {
  const failure = taskFailure(task.error);
  return h("p", { className: "alert", dataset: { role: "failure" } }, t("task.error", { error: failure.text }), originalLine(failure.original));
}

/** @param {Entry} entry */
function render(entry) {
  const { task } = entry;
  const money = [`${t("task.price")} ${yuan(task.price)}`];
  if (task.refunded && task.refunded.amount !== "0.00" && Number(task.refunded.amount) !== 0) {
    money.push(`${t("task.refunded")} ${yuan(task.refunded)}`, `${t("task.charged")} ${yuan(task.charged)}`);
  }
  const card = h(
    "li",
    { className: "task card", id: `task-${task.id}`, dataset: { taskId: task.id, status: task.status } },
    h(
      "div",
      { className: "task-head" },
      h("strong", { textContent: task.model.name }),
      h("span", { className: "muted", textContent: describe(task) }),
      h("span", { className: `badge status-${task.status.toLowerCase()}`, dataset: { role: "status" }, textContent: t(`status.${task.status}`) }),
    ),
    h("p", { className: "meta" }, h("code", { textContent: task.id }), " · ", money.join(" · ")),
    h(
      "ol",
      { className: "timeline", attrs: { "aria-label": t("task.statusLabel") } },
      entry.history.map((step) =>
        h(
          "li",
          { dataset: { status: step.status } },
          t(`status.${step.status}`),
          " ",
          h("time", { dateTime: step.at.toISOString(), textContent: clock(step.at) }),
        ),
      ),
    ),
    task.status === "FAILED" ? failureNote(task) : null,
    entry.error ? h("p", { className: "alert" }, entry.error.text, originalLine(entry.error.detail)) : null,
    entry.note && !TERMINAL.has(task.status) ? h("p", { className: "hint", dataset: { role: "note" }, textContent: t(entry.note) }) : null,
    resultsOf(task),
  );
  const old = $(`task-${task.id}`);
  if (old) old.replaceWith(card);
  else $("tasks").prepend(card);
  $("results-empty").hidden = tasks.size > 0;
}

/** Renders every followed task again (after a change of language). */
export function renderTasks() {
  for (const entry of tasks.values()) render(entry);
}
