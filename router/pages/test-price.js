// @ts-check
// /test's price preview: the server's own quote (`model.quote`) for exactly the form's values,
// shown in the price output with what it covers.
import { $, PageError, gql, t, yuan } from "./common.js";

const QUOTE = `query PageQuote($id: Int!, $seconds: Int, $resolution: String, $count: Int) {
  model(id: $id) { quote(seconds: $seconds, resolution: $resolution, count: $count) { amount } } }`;

/** @typedef {Record<string, any>} GraphRow a model of PageModels (checked against the schema by the trusted-documents check) */

const priceOutput = $("price");
let quoteSeq = 0;

/**
 * Shows the server's quote for a model at these values (the seconds count for a video only); a
 * quote that a later one overtook is dropped.
 * @param {GraphRow} model a model of PageModels
 * @param {{ resolution: string, count: number, seconds: number }} values
 */
export async function showQuote(model, values) {
  const seq = ++quoteSeq;
  const video = model.kind === "VIDEO";
  /** @type {{ id: number, resolution: string, count: number, seconds?: number }} */
  const variables = { id: model.id, resolution: values.resolution, count: values.count };
  if (video) variables.seconds = values.seconds;
  priceOutput.setAttribute("aria-busy", "true");
  $("price-note").textContent = "";
  try {
    const data = await gql(QUOTE, variables);
    if (seq !== quoteSeq) return;
    const quote = data.model?.quote;
    priceOutput.textContent = quote ? yuan(quote) : "—";
    priceOutput.dataset.amount = quote?.amount ?? "";
    $("price-note").textContent = quote ? t(video ? "price.video" : "price.image") : t("price.invalid");
  } catch (error) {
    if (seq !== quoteSeq) return;
    priceOutput.textContent = "—";
    priceOutput.dataset.amount = "";
    $("price-note").textContent = error instanceof PageError ? error.text : "";
  } finally {
    if (seq === quoteSeq) priceOutput.removeAttribute("aria-busy");
  }
}
