// The operator console (/admin; README "Console"; docs/adr/0022-operators-and-audit.md). Operators
// sign in with email and password (an HttpOnly session cookie the page never sees, plus a CSRF
// token it keeps in memory and sends with every write), or with an operator token or the
// break-glass ADMIN_TOKEN (kept in this module's memory only). Everything goes through admin
// GraphQL on the router's /graphql. The page shows only the views and buttons the operator's
// role may use (`adminMe { allowedFields }`); the server refuses the rest anyway. Every write is a
// form in a dialog that states what will change and what it costs before it runs.
import { gql, h, initLang, onLangChange, t, when, yuan } from "./common.js";

/** Who is signed in: `{ token?, csrf?, role, actor, via, allowed: Set<string> }`, or null. */
let auth = null;
let view = "overview";
let pollTimer = null;
let keysAfter = null;
let auditAfter = null;

const $ = (id) => document.getElementById(id);
const KEY = "id name accountId status scopes allowedIps rateLimit callbackUrl balance { amount } spent { amount } taskCount createdAt";
const ENTRY = "id accountId customerId keyId kind amount { amount } balanceAfter { amount } orderId reason createdAt";
const IDENTITY = "role actor operatorId via allowedFields";

const run = (query, variables) => gql(query, variables, auth?.token, auth?.csrf ? { "x-csrf-token": auth.csrf } : {});
/** Whether the operator's role may use an admin field (`Mutation.adminTopUpAccount`). */
const can = (field) => Boolean(auth?.allowed.has(field));

// -- Money: exact milli-yuan in the page too ------------------------------------------------------

/** Milli-yuan of a decimal yuan text (at most three decimals), or null when it is not one. */
function milli(text) {
  const m = /^(\d{1,12})(?:\.(\d{1,3}))?$/.exec(String(text ?? "").trim());
  return m ? Number(m[1]) * 1000 + Number((m[2] ?? "").padEnd(3, "0")) : null;
}
/** Milli-yuan as yuan: two decimals, three when the last digit is not 0. */
const fmt = (ml) => {
  const sign = ml < 0 ? "-" : "";
  const abs = Math.abs(ml);
  const text = `${Math.floor(abs / 1000)}.${String(abs % 1000).padStart(3, "0")}`;
  return `${sign}¥${text.endsWith("0") ? text.slice(0, -1) : text}`;
};
const moneyMilli = (money) => milli(String(money?.amount ?? "").replace(/^-/, "")) * (String(money?.amount ?? "").startsWith("-") ? -1 : 1);

/** A value translated when the page has words for it (statuses, payment states, ledger kinds, roles). */
const word = (group, value) => {
  const key = `admin.${group}.${value}`;
  const text = t(key);
  return text === key ? String(value) : text;
};

// -- Messages --------------------------------------------------------------------------------------

function fail(error) {
  const box = $("error");
  box.hidden = !error;
  box.textContent = error ? `${t("admin.failed")} ${error.message || error.code || ""}` : "";
}

function showEntry(entry) {
  $("ledger").hidden = !entry;
  $("ledger-entry").textContent = entry
    ? `${word("kind", entry.kind)} ${yuan(entry.amount)} → ${t("admin.balanceAfter")} ${yuan(entry.balanceAfter)}\n#${entry.id} ${entry.accountId}${entry.customerId ? ` / ${entry.customerId}` : ""} ${when(entry.createdAt)}`
    : "";
}

// -- The form dialog ------------------------------------------------------------------------------

/**
 * Opens the dialog: fields with validation, a summary of what will change and what it costs
 * (recomputed as the operator types), Confirm and Cancel. Confirm checks every field, then runs
 * `submit(values)`; its error stays in the dialog. Resolves with submit's result, or null.
 * @param {{ title: string, fields?: { name: string, label: string, value?: string, inputmode?: string, check?: (v: string) => string | null }[],
 *   summary: (values: Record<string, string>) => string, submit: (values: Record<string, string>) => Promise<unknown> }} spec
 */
function openDialog(spec) {
  const dialog = $("op-dialog");
  const fields = spec.fields ?? [];
  $("op-dialog-title").textContent = spec.title;
  $("op-error").hidden = true;
  const inputs = fields.map((f) => {
    const input = h("input", { id: `op-${f.name}`, name: f.name, value: f.value ?? "", spellcheck: false, autocomplete: "off" });
    if (f.inputmode) input.inputMode = f.inputmode;
    const error = h("p", { className: "field-error", id: `op-${f.name}-error`, hidden: true });
    input.setAttribute("aria-describedby", error.id);
    return { f, input, error, wrap: h("div", { className: "field" }, h("label", { htmlFor: input.id, textContent: f.label }), input, error) };
  });
  $("op-fields").replaceChildren(...inputs.map((i) => i.wrap));
  const values = () => Object.fromEntries(inputs.map((i) => [i.f.name, i.input.value.trim()]));
  const check = () => {
    let ok = true;
    for (const i of inputs) {
      const problem = i.f.check?.(i.input.value.trim()) ?? null;
      i.error.hidden = !problem;
      i.error.textContent = problem ?? "";
      i.input.setAttribute("aria-invalid", String(Boolean(problem)));
      if (problem) ok = false;
    }
    return ok;
  };
  const update = () => {
    const complete = inputs.every((i) => !i.f.check?.(i.input.value.trim()));
    $("op-summary").textContent = complete ? spec.summary(values()) : t("admin.fillIn");
  };
  for (const i of inputs) i.input.addEventListener("input", update);
  update();
  return new Promise((resolve) => {
    const form = $("op-form");
    const close = (result) => {
      form.removeEventListener("submit", onSubmit);
      $("op-cancel").removeEventListener("click", onCancel);
      dialog.removeEventListener("cancel", onCancel);
      dialog.close();
      resolve(result);
    };
    const onCancel = (event) => {
      event.preventDefault();
      close(null);
    };
    const onSubmit = async (event) => {
      event.preventDefault();
      if (!check()) return;
      $("op-confirm").disabled = true;
      try {
        close(await spec.submit(values()));
      } catch (error) {
        $("op-error").hidden = false;
        $("op-error").textContent = `${t("admin.failed")} ${error.message || error.code || ""}`;
      } finally {
        $("op-confirm").disabled = false;
      }
    };
    form.addEventListener("submit", onSubmit);
    $("op-cancel").addEventListener("click", onCancel);
    dialog.addEventListener("cancel", onCancel);
    dialog.showModal();
    (inputs[0]?.input ?? $("op-confirm")).focus();
  });
}

/** Field checks: a positive yuan amount, a yuan amount of zero or more, a list, a rate. */
const positiveYuan = (v) => (milli(v) === null || milli(v) === 0 ? t("admin.badAmount") : null);
const yuanOrZero = (v) => (milli(v) === null ? t("admin.badAmount") : null);
const optionalYuan = (v) => (v === "" ? null : yuanOrZero(v));
const rateCheck = (v) => (v === "" || /^\d{1,10}$/.test(v) ? null : t("admin.badRate"));
const listOf = (text) =>
  text
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);

/** Runs a write through the dialog, then refreshes the view. */
async function write(spec) {
  fail(null);
  const result = await openDialog(spec);
  if (result !== null) await refresh();
  return result;
}

// -- Tables ----------------------------------------------------------------------------------------

/** Gives each cell its column's label (phones show one labelled card per row). */
function labelCells(rows, labels) {
  for (const row of rows) {
    for (const [i, td] of [...row.children].entries()) td.setAttribute("data-label", labels[i] ?? "");
  }
}

/** A table whose cells carry their column's label (phones show one labelled card per row). */
function table(el, headers, rows) {
  const labels = headers.map((key) => t(key));
  labelCells(rows, labels);
  el.replaceChildren(
    h(
      "thead",
      {},
      h(
        "tr",
        {},
        labels.map((label) => h("th", { textContent: label })),
      ),
    ),
    h("tbody", {}, rows),
  );
}
// One wrapper per cell: on a phone the cell is a grid of its label and this.
const cell = (...children) => h("td", {}, h("div", {}, ...children));
const button = (label, onclick) => h("button", { type: "button", className: "secondary small", textContent: t(label), onclick });
const code = (text) => h("code", { textContent: text });

// -- API keys ------------------------------------------------------------------------------------

function topUpKeyDialog(k) {
  return write({
    title: t("admin.topupTitle", { id: k.id }),
    fields: [{ name: "amount", label: t("admin.topupAmount"), inputmode: "decimal", check: positiveYuan }],
    summary: ({ amount }) =>
      t("admin.topupSummary", { id: k.id, amount: fmt(milli(amount)), before: fmt(moneyMilli(k.balance)), after: fmt(moneyMilli(k.balance) + milli(amount)) }),
    submit: async ({ amount }) => {
      const data = await run(`mutation($input: AdminTopUpAccountInput!) { adminTopUpAccount(input: $input) { ledgerEntry { ${ENTRY} } } }`, {
        input: { keyId: k.id, amount },
      });
      showEntry(data.adminTopUpAccount.ledgerEntry);
      return data;
    },
  });
}

function keyStatusDialog(k) {
  const status = k.status === "ACTIVE" ? "DISABLED" : "ACTIVE";
  return write({
    title: t(status === "DISABLED" ? "admin.disableTitle" : "admin.enableTitle", { id: k.id }),
    summary: () => t(status === "DISABLED" ? "admin.disableKeySummary" : "admin.enableKeySummary", { id: k.id, name: k.name }),
    submit: async () => {
      showEntry(null);
      return run(`mutation($input: AdminSetApiKeyStatusInput!) { adminSetApiKeyStatus(input: $input) { apiKey { id status } } }`, {
        input: { keyId: k.id, status },
      });
    },
  });
}

function keySettingsDialog(k) {
  return write({
    title: t("admin.settingsTitle", { id: k.id }),
    fields: [
      { name: "scopes", label: t("admin.scopesPrompt"), value: k.scopes.join(", ") },
      { name: "ips", label: t("admin.ipsPrompt"), value: (k.allowedIps ?? []).join(", ") },
      { name: "rate", label: t("admin.ratePrompt"), value: k.rateLimit == null ? "" : String(k.rateLimit), inputmode: "numeric", check: rateCheck },
    ],
    summary: ({ scopes, ips, rate }) =>
      t("admin.settingsSummary", {
        id: k.id,
        scopes: listOf(scopes).join(", ") || t("admin.everyScope"),
        ips: listOf(ips).join(", ") || t("admin.any"),
        rate: rate === "" ? t("admin.unlimited") : rate,
      }),
    submit: async ({ scopes, ips, rate }) => {
      showEntry(null);
      const input = { keyId: k.id, scopes: listOf(scopes), allowedIps: listOf(ips).length ? listOf(ips) : null, rateLimit: rate === "" ? null : Number(rate) };
      return run(`mutation($input: AdminUpdateApiKeyInput!) { adminUpdateApiKey(input: $input) { apiKey { id } } }`, { input });
    },
  });
}

function keyActions(k) {
  // Support may disable a key, not enable one (README "Operator roles").
  const mayToggle = can("Mutation.adminSetApiKeyStatus") && (auth.role !== "SUPPORT" || k.status === "ACTIVE");
  return [
    can("Mutation.adminTopUpAccount") ? button("admin.topup", () => topUpKeyDialog(k)) : null,
    mayToggle ? button(k.status === "ACTIVE" ? "admin.disable" : "admin.enable", () => keyStatusDialog(k)) : null,
    can("Mutation.adminUpdateApiKey") ? button("admin.settings", () => keySettingsDialog(k)) : null,
  ];
}

async function loadKeys(append = false) {
  $("key-create").hidden = !can("Mutation.adminCreateApiKey");
  const data = await run(
    `query($search: String, $after: String) { adminApiKeys(search: $search, after: $after, first: 20) { totalCount pageInfo { hasNextPage endCursor } nodes { ${KEY} } } }`,
    { search: $("key-query").value.trim() || null, after: append ? keysAfter : null },
  );
  const conn = data.adminApiKeys;
  keysAfter = conn.pageInfo.endCursor;
  $("keys-more").hidden = !conn.pageInfo.hasNextPage;
  const headers = [
    "admin.col.key",
    "admin.col.account",
    "admin.col.status",
    "admin.col.balance",
    "admin.col.scopes",
    "admin.col.ips",
    "admin.col.rate",
    "admin.col.actions",
  ];
  const rows = conn.nodes.map((k) =>
    h(
      "tr",
      { dataset: { key: k.id } },
      cell(code(k.id), h("br"), k.name),
      cell(code(k.accountId)),
      cell(h("span", { className: "key-status", textContent: word("status", k.status) })),
      cell(h("span", { className: "key-balance", textContent: yuan(k.balance) })),
      cell(k.scopes.join(", ") || t("admin.everyScope")),
      cell(k.allowedIps ? k.allowedIps.join(", ") : t("admin.any")),
      cell(k.rateLimit == null ? t("admin.unlimited") : String(k.rateLimit)),
      cell(...keyActions(k)),
    ),
  );
  const body = $("keys-table").tBodies[0];
  if (append && body) {
    const labels = headers.map((key) => t(key));
    labelCells(rows, labels);
    body.append(...rows);
  } else table($("keys-table"), headers, rows);
}

async function createKey(event) {
  event.preventDefault();
  const name = $("new-name").value.trim();
  const balance = $("new-balance").value.trim();
  if (!name || optionalYuan(balance)) {
    fail({ message: !name ? t("admin.nameNeeded") : t("admin.badAmount") });
    return;
  }
  const created = await write({
    title: t("admin.createTitle"),
    summary: () => t(balance && milli(balance) > 0 ? "admin.createSummaryMoney" : "admin.createSummary", { name, amount: balance ? fmt(milli(balance)) : "" }),
    submit: () =>
      run(`mutation($input: AdminCreateApiKeyInput!) { adminCreateApiKey(input: $input) { key id ledgerEntry { ${ENTRY} } } }`, {
        input: { name, balance: balance || null },
      }),
  });
  if (!created) return;
  const c = created.adminCreateApiKey;
  showEntry(c.ledgerEntry);
  const secret = $("new-secret");
  secret.hidden = false;
  secret.replaceChildren(h("strong", { textContent: t("admin.secretOnce") }), " ", h("code", { id: "new-key", textContent: c.key }), ` (${c.id})`);
  $("new-name").value = "";
  $("new-balance").value = "";
}

// -- Wallets, orders, deliveries ------------------------------------------------------------------

function walletActions(w) {
  const topUp = () =>
    write({
      title: t("admin.topupTitle", { id: w.customerId }),
      fields: [{ name: "amount", label: t("admin.topupAmount"), inputmode: "decimal", check: positiveYuan }],
      summary: ({ amount }) =>
        t("admin.topupSummary", {
          id: `${w.customerId} (${w.accountId})`,
          amount: fmt(milli(amount)),
          before: fmt(moneyMilli(w.available)),
          after: fmt(moneyMilli(w.available) + milli(amount)),
        }),
      submit: async ({ amount }) => {
        const data = await run(`mutation($input: AdminTopUpCustomerInput!) { adminTopUpCustomer(input: $input) { ledgerEntry { ${ENTRY} } } }`, {
          input: { accountId: w.accountId, customerId: w.customerId, amount },
        });
        showEntry(data.adminTopUpCustomer.ledgerEntry);
        return data;
      },
    });
  const credit = () =>
    write({
      title: t("admin.creditTitle", { id: w.customerId }),
      fields: [{ name: "limit", label: t("admin.creditPrompt"), value: w.creditLine.amount, inputmode: "decimal", check: yuanOrZero }],
      summary: ({ limit }) =>
        t("admin.creditSummary", {
          id: `${w.customerId} (${w.accountId})`,
          before: fmt(moneyMilli(w.creditLine)),
          after: fmt(milli(limit)),
          floor: fmt(-milli(limit)),
        }),
      submit: async ({ limit }) => {
        showEntry(null);
        return run(
          `mutation($input: AdminSetCustomerCreditLineInput!) { adminSetCustomerCreditLine(input: $input) { customerBalance { creditLine { amount } } } }`,
          { input: { accountId: w.accountId, customerId: w.customerId, limit } },
        );
      },
    });
  return [
    can("Mutation.adminTopUpCustomer") ? button("admin.topup", topUp) : null,
    can("Mutation.adminSetCustomerCreditLine") ? button("admin.credit", credit) : null,
  ];
}

async function loadWallets() {
  const data = await run(
    `{ adminCustomerWallets(first: 50) { nodes { accountId customerId contact available { amount } frozen { amount } creditLine { amount } } } }`,
  );
  table(
    $("wallets-table"),
    ["admin.col.account", "admin.col.customer", "admin.col.available", "admin.col.frozen", "admin.col.credit", "admin.col.actions"],
    data.adminCustomerWallets.nodes.map((w) =>
      h(
        "tr",
        { dataset: { customer: w.customerId } },
        cell(code(w.accountId)),
        cell(w.customerId),
        cell(h("span", { className: "wallet-available", textContent: yuan(w.available) })),
        cell(yuan(w.frozen)),
        cell(yuan(w.creditLine)),
        cell(...walletActions(w)),
      ),
    ),
  );
}

async function loadOrders() {
  const data = await run(
    `{ adminOrders(first: 50) { nodes { id accountId customerId status paymentStatus failureReason amount { amount } createdAt ledgerEntries { kind amount { amount } } } } }`,
  );
  table(
    $("orders-table"),
    ["admin.col.order", "admin.col.account", "admin.col.status", "admin.col.amount", "admin.col.payments", "admin.col.created"],
    data.adminOrders.nodes.map((o) =>
      h(
        "tr",
        {},
        cell(code(o.id), h("br"), o.customerId),
        cell(code(o.accountId)),
        cell(
          `${word("order", o.status)} / ${word("payment", o.paymentStatus)}`,
          o.failureReason ? h("div", { className: "hint", textContent: o.failureReason }) : null,
        ),
        cell(yuan(o.amount)),
        cell(o.ledgerEntries.map((e) => `${word("kind", e.kind)} ${yuan(e.amount)}`).join("; ") || "—"),
        cell(when(o.createdAt)),
      ),
    ),
  );
}

async function loadDeliveries() {
  const data = await run(
    `{ adminWebhookDeliveries(first: 50) { nodes { id accountId event status attemptCount url createdAt attempts { at status error } } } }`,
  );
  table(
    $("deliveries-table"),
    ["admin.col.delivery", "admin.col.event", "admin.col.status", "admin.col.attempts", "admin.col.actions"],
    data.adminWebhookDeliveries.nodes.map((d) =>
      h(
        "tr",
        {},
        cell(`#${d.id}`, h("br"), code(d.accountId)),
        cell(d.event, h("div", { className: "hint", textContent: d.url })),
        cell(word("delivery", d.status)),
        cell(d.attempts.map((a) => `${when(a.at)} ${a.status ?? a.error ?? ""}`).join("\n") || "—"),
        cell(
          can("Mutation.adminResendDelivery")
            ? button("admin.resend", () =>
                write({
                  title: t("admin.resendTitle", { id: d.id }),
                  summary: () => t("admin.resendSummary", { id: d.id, url: d.url }),
                  submit: () => {
                    showEntry(null);
                    return run(`mutation($input: AdminResendDeliveryInput!) { adminResendDelivery(input: $input) { delivery { id status } } }`, {
                      input: { deliveryId: d.id },
                    });
                  },
                }),
              )
            : null,
        ),
      ),
    ),
  );
}

// -- Channels (display and role gating; the channel contract is the generation subgraph's) ---------

function channelActions(c) {
  return [
    !c.implicit && can("Mutation.adminSetChannelStatus")
      ? button(c.status === "ENABLED" ? "admin.disable" : "admin.enable", () =>
          write({
            title: t(c.status === "ENABLED" ? "admin.disableTitle" : "admin.enableTitle", { id: c.id }),
            summary: () => t(c.status === "ENABLED" ? "admin.disableChannelSummary" : "admin.enableChannelSummary", { id: c.id, models: c.models.join(", ") }),
            submit: () =>
              run(`mutation($input: AdminSetChannelStatusInput!) { adminSetChannelStatus(input: $input) { channel { id status } } }`, {
                input: { id: c.id, enabled: c.status !== "ENABLED" },
              }),
          }),
        )
      : null,
    can("Mutation.adminTestChannel")
      ? button("admin.test", () =>
          write({
            title: t("admin.testTitle", { id: c.id }),
            summary: () => t("admin.testSummary", { id: c.id }),
            submit: async () => {
              const r = (
                await run(`mutation($input: AdminTestChannelInput!) { adminTestChannel(input: $input) { ok latencyMs error } }`, { input: { id: c.id } })
              ).adminTestChannel;
              fail(r.ok ? null : { message: r.error ?? "" });
              return r;
            },
          }),
        )
      : null,
  ];
}

async function loadChannels() {
  let data;
  try {
    data = await run(
      `{ adminChannels { id name baseUrl models priority weight status disabledReason consecutiveFailures nextProbeAt implicit stats { successRate latencyMsAvg openTasks } } }`,
    );
  } catch (error) {
    table(
      $("channels-table"),
      ["admin.col.channel"],
      [h("tr", {}, cell(t("admin.channelsUnavailable"), h("div", { className: "hint", textContent: error.message })))],
    );
    return;
  }
  table(
    $("channels-table"),
    [
      "admin.col.channel",
      "admin.col.status",
      "admin.col.models",
      "admin.col.routing",
      "admin.col.failures",
      "admin.col.nextProbe",
      "admin.col.health",
      "admin.col.actions",
    ],
    data.adminChannels.map((c) =>
      h(
        "tr",
        { dataset: { channel: c.id } },
        cell(code(c.id), h("br"), c.name, h("div", { className: "hint", textContent: c.baseUrl })),
        cell(
          h("span", { className: "channel-status", textContent: word("channel", c.status) }),
          c.disabledReason ? h("div", { className: "hint", textContent: c.disabledReason }) : null,
        ),
        cell(c.models.length === 0 || c.models.includes("*") ? t("admin.allModels") : c.models.map(String).join(", ")),
        cell(t("admin.routing", { priority: c.priority, weight: c.weight })),
        cell(h("span", { className: "channel-failures", textContent: String(c.consecutiveFailures) })),
        cell(c.nextProbeAt ? when(c.nextProbeAt) : "—"),
        cell(
          `${c.stats.successRate == null ? "—" : `${Math.round(c.stats.successRate * 100)}%`} · ${c.stats.latencyMsAvg == null ? "—" : `${Math.round(c.stats.latencyMsAvg)} ms`} · ${t("admin.openTasks")} ${c.stats.openTasks}`,
        ),
        cell(...channelActions(c)),
      ),
    ),
  );
}

// -- Audit log ------------------------------------------------------------------------------------

/** A local datetime-local value as ISO 8601 UTC, or null. */
const isoOf = (value) => (value ? new Date(value).toISOString() : null);

async function loadAudit(append = false) {
  const actor = $("audit-actor").value.trim() || null;
  const objectId = $("audit-object").value.trim() || null;
  const data = await run(
    `query($actor: String, $objectId: String, $since: DateTime, $until: DateTime, $after: String) { adminAuditLog(actor: $actor, objectId: $objectId, since: $since, until: $until, after: $after, first: 50) { pageInfo { hasNextPage endCursor } nodes { id at actor role action objectType objectId requestId before after ledgerEntryId } } }`,
    { actor, objectId, since: isoOf($("audit-since").value), until: isoOf($("audit-until").value), after: append ? auditAfter : null },
  );
  const conn = data.adminAuditLog;
  auditAfter = conn.pageInfo.endCursor;
  $("audit-more").hidden = !conn.pageInfo.hasNextPage;
  const change = (e) =>
    h(
      "details",
      {},
      h("summary", { textContent: e.ledgerEntryId ? t("admin.auditLedger", { id: e.ledgerEntryId }) : t("admin.auditChange") }),
      h("div", { className: "audit-json", textContent: `${t("admin.auditBefore")} ${e.before ?? "—"}\n${t("admin.auditAfter")} ${e.after ?? "—"}` }),
    );
  const headers = ["admin.col.time", "admin.col.operator", "admin.col.action", "admin.col.object", "admin.col.request", "admin.col.change"];
  const rows = conn.nodes.map((e) =>
    h(
      "tr",
      { dataset: { audit: e.id } },
      cell(when(e.at)),
      cell(e.actor, e.role ? h("div", { className: "hint", textContent: word("role", e.role.toUpperCase()) }) : null),
      cell(h("code", { className: "audit-action", textContent: e.action })),
      cell(`${e.objectType} `, e.objectId ? code(e.objectId) : ""),
      cell(e.requestId ? code(e.requestId) : "—"),
      cell(change(e)),
    ),
  );
  const body = $("audit-table").tBodies[0];
  if (append && body) {
    const labels = headers.map((key) => t(key));
    labelCells(rows, labels);
    body.append(...rows);
  } else table($("audit-table"), headers, rows);
}

// -- Overview ------------------------------------------------------------------------------------

let chart = null;
let uPlotLoading = null;

async function loadOverview() {
  const o = (
    await run(
      `{ adminOverview(minutes: 60) { at tasksPerMinute { minute submitted succeeded failed } window { successRate } revenueToday { amount } refundsToday { amount } } }`,
    )
  ).adminOverview;
  const last = o.tasksPerMinute.at(-1);
  $("ov-tpm").textContent = String(last?.submitted ?? 0);
  $("ov-success").textContent = o.window.successRate == null ? "—" : `${Math.round(o.window.successRate * 1000) / 10}%`;
  $("ov-revenue").textContent = yuan(o.revenueToday);
  $("ov-refunds").textContent = yuan(o.refundsToday);
  $("ov-at").textContent = `${t("admin.updated")} ${when(o.at)}`;
  uPlotLoading ??= import("./uPlot.esm.js").then((m) => m.default);
  const uPlot = await uPlotLoading;
  const x = o.tasksPerMinute.map((p) => Date.parse(`${p.minute}:00Z`) / 1000);
  const data = [x, o.tasksPerMinute.map((p) => p.submitted), o.tasksPerMinute.map((p) => p.succeeded), o.tasksPerMinute.map((p) => p.failed)];
  const el = $("ov-chart");
  if (chart) return chart.setData(data);
  chart = new uPlot(
    {
      width: Math.max(240, el.clientWidth || 600),
      height: 200,
      series: [
        {},
        { label: t("admin.submitted"), stroke: "#1d4ed8" },
        { label: t("admin.succeeded"), stroke: "#0f766e" },
        { label: t("admin.failedTasks"), stroke: "#c2410c" },
      ],
    },
    data,
    el,
  );
}

// -- Views, sign-in and sign-out ---------------------------------------------------------------------

/** Each view, the admin field it reads (a role without it does not see the view), and its loader. */
const VIEWS = {
  overview: ["Query.adminOverview", loadOverview],
  keys: ["Query.adminApiKeys", () => loadKeys()],
  wallets: ["Query.adminCustomerWallets", loadWallets],
  orders: ["Query.adminOrders", loadOrders],
  deliveries: ["Query.adminWebhookDeliveries", loadDeliveries],
  channels: ["Query.adminChannels", loadChannels],
  audit: ["Query.adminAuditLog", () => loadAudit()],
};

async function refresh() {
  try {
    await VIEWS[view][1]();
  } catch (error) {
    if (error.status === 401) return signedOut();
    fail(error);
  }
}

function show(name) {
  view = name;
  for (const section of document.querySelectorAll(".view")) section.hidden = section.id !== `view-${name}`;
  for (const b of document.querySelectorAll("[data-view]")) b.setAttribute("aria-pressed", String(b.dataset.view === name));
  clearInterval(pollTimer);
  // The overview is a short poll: one bounded query every 5 s while it is shown.
  if (name === "overview") pollTimer = setInterval(() => refresh(), 5000);
  return refresh();
}

/** Shows the console for the identity `me` (`adminMe`, or the session route's answer). */
async function enter(me, credentials) {
  auth = { ...credentials, role: me.role, actor: me.actor, via: me.via, allowed: new Set(me.allowedFields) };
  $("signin-error").hidden = true;
  $("signin").hidden = true;
  $("console").hidden = false;
  $("whoami").textContent = t("admin.whoami", { actor: me.actor, role: word("role", me.role) });
  for (const b of document.querySelectorAll("[data-view]")) b.hidden = !can(VIEWS[b.dataset.view][0]);
  const first = Object.keys(VIEWS).find((name) => can(VIEWS[name][0]));
  if (first) await show(first);
}

function signedOut() {
  auth = null;
  clearInterval(pollTimer);
  $("console").hidden = true;
  $("signin").hidden = false;
  $("token").value = "";
  $("password").value = "";
}

async function signIn(event) {
  event.preventDefault();
  const box = $("signin-error");
  const token = $("token").value.trim();
  const email = $("email").value.trim();
  const password = $("password").value;
  $("token").value = "";
  $("password").value = "";
  try {
    if (token) {
      const me = (await gql(`{ adminMe { ${IDENTITY} } }`, {}, token)).adminMe;
      await enter(me, { token });
      return;
    }
    if (!email || !password) throw { status: 400 };
    const response = await fetch("/admin/session", {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json" },
      body: JSON.stringify({ email, password }),
      credentials: "same-origin",
    });
    const body = await response.json().catch(() => ({}));
    if (!response.ok) throw { status: response.status, message: body.message };
    await enter(body, { csrf: body.csrfToken });
  } catch (error) {
    auth = null;
    box.hidden = false;
    box.textContent =
      error.status === 403
        ? t("admin.disabled")
        : error.status === 429
          ? t("admin.throttled")
          : error.status === 400
            ? t("admin.needBoth")
            : t("admin.badToken");
  }
}

async function signOut() {
  // A session ends on the server; a token is simply forgotten.
  if (auth?.csrf) await fetch("/admin/session", { method: "DELETE", headers: { "x-csrf-token": auth.csrf }, credentials: "same-origin" }).catch(() => null);
  signedOut();
}

/** A reload keeps a live session (the cookie); the CSRF token comes back from the server. */
async function resume() {
  const response = await fetch("/admin/session", { headers: { accept: "application/json" }, credentials: "same-origin" }).catch(() => null);
  if (!response?.ok) return;
  const body = await response.json();
  await enter(body, { csrf: body.csrfToken });
}

initLang("title.admin");
onLangChange(() => {
  if (!auth) return;
  $("whoami").textContent = t("admin.whoami", { actor: auth.actor, role: word("role", auth.role) });
  refresh();
});
$("signin").addEventListener("submit", signIn);
$("signout").addEventListener("click", signOut);
for (const b of document.querySelectorAll("[data-view]")) b.addEventListener("click", () => show(b.dataset.view));
$("key-search").addEventListener("submit", (event) => {
  event.preventDefault();
  refresh();
});
$("keys-more").addEventListener("click", () => loadKeys(true).catch(fail));
$("key-create").addEventListener("submit", createKey);
$("audit-filter").addEventListener("submit", (event) => {
  event.preventDefault();
  refresh();
});
$("audit-more").addEventListener("click", () => loadAudit(true).catch(fail));
resume().finally(() => {
  $("signin").dataset.ready = "true";
});
