/** Locale negotiation for localized labels (docs/architecture.md §5): Chinese by default, English when preferred. */
import Negotiator from "negotiator";

/** The UI languages we localize into. */
export type Locale = "zh" | "en";

/**
 * Picks the locale from an Accept-Language header value.
 * @returns "en" when the header prefers English over Chinese, else "zh"
 */
export function negotiateLocale(acceptLanguage: string | undefined | null): Locale {
  if (!acceptLanguage) return "zh";
  const best = new Negotiator({ headers: { "accept-language": acceptLanguage } }).language(["zh", "en"]);
  return best === "en" ? "en" : "zh";
}
