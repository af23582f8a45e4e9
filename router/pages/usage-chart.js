// @ts-check
// The /client usage chart: the key's spending and its billed seconds and images per UTC day
// (`viewer.usageByDay`), drawn with uPlot (served from node_modules as a local asset, loaded the
// first time an account is shown), with the totals in words and the numbers in a table for those
// who cannot see the canvas.
import { currentLang, h, t, yuan } from "./common.js";
import { amountMilli, formatYuan, MILLI_PER_YUAN } from "./money.js";

const DAY_S = 86_400;
const COLORS = { spent: "#1d4ed8", seconds: "#0f766e", images: "#c2410c", grid: "#e6e9ee", axis: "#57606a" };
const FONT = '12px system-ui, -apple-system, "Segoe UI", Roboto, "Noto Sans", "Noto Sans CJK SC", "PingFang SC", "Microsoft YaHei", sans-serif';

/** @typedef {import("./uPlot.esm.js").default} UPlot a drawn chart */
/** @typedef {typeof import("./uPlot.esm.js").default} UPlotClass uPlot itself (the class and its helpers) */
/** @typedef {"spent" | "units"} ChartName */
/**
 * One UTC day of `viewer.usageByDay`.
 * @typedef {{ date: string, spent: { amount: string }, billedSeconds: number, billedImages: number }} UsageDay
 */

/** @type {Promise<UPlotClass> | null} */
let uPlotLoading = null;
const loadUPlot = () => (uPlotLoading ??= import("./uPlot.esm.js").then((module) => module.default));

/**
 * The usage section of /client.
 * @param {HTMLElement} section the element holding `#usage-summary`, `#chart-spent .plot`,
 *   `#chart-units .plot` and `#usage-table`
 * @returns `update(days)` with the `usageByDay` entries (oldest first), to call after every load
 *   and language change
 */
export function createUsageChart(section) {
  /** One of the section's parts, which its markup always has. */
  const part = (/** @type {string} */ selector) => /** @type {HTMLElement} */ (section.querySelector(selector));
  const plots = { spent: part("#chart-spent .plot"), units: part("#chart-units .plot") };
  /** @type {Partial<Record<ChartName, UPlot>>} */
  let charts = {};
  /** @type {UsageDay[]} */
  let days = [];
  /** @type {"en" | "zh" | null} */
  let drawnLang = null;

  const width = (/** @type {HTMLElement} */ el) => Math.max(240, Math.floor(el.clientWidth));
  const height = () => (window.matchMedia("(max-width: 640px)").matches ? 170 : 210);
  const observer = new ResizeObserver(() => {
    for (const [name, chart] of Object.entries(charts)) chart?.setSize({ width: width(plots[/** @type {ChartName} */ (name)]), height: height() });
  });
  for (const el of Object.values(plots)) observer.observe(el);

  /** @returns {Record<ChartName, uPlot.AlignedData>} */
  const data = () => {
    const x = days.map((d) => Date.parse(`${d.date}T00:00:00Z`) / 1000);
    return {
      spent: [x, days.map((d) => amountMilli(d.spent) / MILLI_PER_YUAN)],
      units: [x, days.map((d) => d.billedSeconds), days.map((d) => d.billedImages)],
    };
  };

  /**
   * @param {UPlotClass} uPlot
   * @param {ChartName} name
   * @returns {uPlot.Options}
   */
  function options(uPlot, name) {
    // uPlot's ES module always has its bar path builder (the types leave every builder optional).
    const bars = /** @type {NonNullable<UPlotClass["paths"]["bars"]>} */ (uPlot.paths.bars);
    const locale = currentLang() === "zh" ? "zh-CN" : "en-GB";
    const short = new Intl.DateTimeFormat(locale, { month: "numeric", day: "numeric", timeZone: "UTC" });
    const long = new Intl.DateTimeFormat(locale, { dateStyle: "medium", timeZone: "UTC" });
    const number = new Intl.NumberFormat(locale, { maximumFractionDigits: 3 });
    /** @type {uPlot.Axis} */
    const axis = { stroke: COLORS.axis, font: FONT, grid: { stroke: COLORS.grid, width: 1 }, ticks: { stroke: COLORS.grid, width: 1, size: 4 } };
    const at = (/** @type {number | null | undefined} */ idx) => (idx == null ? null : days[idx]);
    /** @type {uPlot.Series} */
    const day = {
      label: t("usage.day"),
      value: (_u, _v, _s, idx) => {
        const d = at(idx);
        return d ? long.format(new Date(`${d.date}T00:00:00Z`)) : "—";
      },
    };
    /** @type {uPlot.Scale.Range} */
    const integers = (_u, _min, max) => [0, Math.max(4, Math.ceil(max * 1.15))];
    /** @type {Omit<uPlot.Options, "series">} */
    const common = {
      width: width(plots[name]),
      height: height(),
      tzDate: (ts) => uPlot.tzDate(new Date(ts * 1000), "Etc/UTC"),
      cursor: { y: false, drag: { x: false, y: false, setScale: false }, points: { size: 7 } },
      legend: { live: true },
      padding: [12, 8, 0, 4],
    };
    /** @type {uPlot.Axis} */
    const xAxis = { ...axis, space: 44, values: (_u, splits) => splits.map((v) => short.format(new Date(v * 1000))) };
    /** @type {uPlot.Scale} */
    const xScale = { time: true, range: (_u, min, max) => [min - DAY_S / 2, max + DAY_S / 2] };
    if (name === "spent") {
      return {
        ...common,
        scales: {
          x: xScale,
          yuan: { range: (_u, min, max) => [Math.min(0, min * 1.15), max > 0 ? max * 1.15 : 1] },
        },
        axes: [xAxis, { ...axis, scale: "yuan", size: 56, values: (_u, splits) => splits.map((v) => `¥${number.format(v)}`) }],
        series: [
          day,
          {
            label: t("usage.series.spent"),
            scale: "yuan",
            stroke: COLORS.spent,
            fill: "rgba(29, 78, 216, 0.78)",
            width: 0,
            paths: bars({ size: [0.72, 36] }),
            points: { show: false },
            value: (_u, _v, _s, idx) => yuan(at(idx)?.spent),
          },
        ],
      };
    }
    return {
      ...common,
      scales: { x: xScale, seconds: { range: integers }, images: { range: integers } },
      axes: [
        xAxis,
        { ...axis, scale: "seconds", size: 48, values: (_u, splits) => splits.map((v) => (Number.isInteger(v) ? number.format(v) : "")) },
        {
          ...axis,
          scale: "images",
          side: 1,
          size: 40,
          grid: { show: false },
          values: (_u, splits) => splits.map((v) => (Number.isInteger(v) ? number.format(v) : "")),
        },
      ],
      series: [
        day,
        // A pair of bars per day: seconds left of the day (left axis), images right of it (right axis).
        {
          label: t("usage.series.seconds"),
          scale: "seconds",
          stroke: COLORS.seconds,
          fill: "rgba(15, 118, 110, 0.8)",
          width: 0,
          paths: bars({ size: [0.4, 18], align: -1 }),
          points: { show: false },
          value: (_u, _v, _s, idx) => {
            const d = at(idx);
            return d ? t("unit.seconds", { n: number.format(d.billedSeconds) }) : "—";
          },
        },
        {
          label: t("usage.series.images"),
          scale: "images",
          stroke: COLORS.images,
          fill: "rgba(194, 65, 12, 0.8)",
          width: 0,
          paths: bars({ size: [0.4, 18], align: 1 }),
          points: { show: false },
          value: (_u, _v, _s, idx) => {
            const d = at(idx);
            return d ? t("unit.images", { n: number.format(d.billedImages) }) : "—";
          },
        },
      ],
    };
  }

  function renderText() {
    const spent = days.reduce((sum, d) => sum + amountMilli(d.spent), 0);
    const seconds = days.reduce((sum, d) => sum + d.billedSeconds, 0);
    const images = days.reduce((sum, d) => sum + d.billedImages, 0);
    const used = days.filter((d) => amountMilli(d.spent) !== 0 || d.billedSeconds || d.billedImages);
    part("#usage-heading").textContent = t("usage.heading", { n: days.length });
    part("#usage-summary").textContent = used.length
      ? t("usage.total", { n: days.length, spent: yuan({ amount: formatYuan(spent) }), seconds, images })
      : t("usage.empty", { n: days.length });
    const locale = currentLang() === "zh" ? "zh-CN" : "en-GB";
    const long = new Intl.DateTimeFormat(locale, { dateStyle: "medium", timeZone: "UTC" });
    part("#usage-table tbody").replaceChildren(
      ...used
        .slice()
        .reverse()
        .map((d) =>
          h(
            "tr",
            { dataset: { date: d.date } },
            h("td", {}, h("time", { dateTime: d.date, textContent: long.format(new Date(`${d.date}T00:00:00Z`)) })),
            h("td", { textContent: yuan(d.spent) }),
            h("td", { textContent: String(d.billedSeconds) }),
            h("td", { textContent: String(d.billedImages) }),
          ),
        ),
    );
    part("#usage-details").hidden = used.length === 0;
  }

  return {
    /**
     * Shows `next` (the `usageByDay` entries); redraws the charts in the current language.
     * @param {UsageDay[] | null | undefined} next
     */
    async update(next) {
      days = Array.isArray(next) ? next : [];
      renderText();
      const uPlot = await loadUPlot();
      const values = data();
      if (drawnLang !== currentLang()) {
        for (const chart of Object.values(charts)) chart?.destroy();
        charts = {};
        drawnLang = currentLang();
      }
      for (const name of /** @type {ChartName[]} */ (["spent", "units"])) {
        const chart = charts[name];
        if (chart) chart.setData(values[name]);
        else charts[name] = new uPlot(options(uPlot, name), values[name], plots[name]);
      }
      section.dataset.drawn = "true";
    },
  };
}
