/**
 * Texts a reader sees nothing of (src/text.ts `isBlank`): zero-width and format characters,
 * spaces of every width, Hangul fillers, a blank braille pattern, a variation selector, tags,
 * line separators, mixed with ordinary white space. Each must count as blank wherever a
 * non-blank text is required.
 */
export const INVISIBLE_TEXTS = [
  "\u200B",
  "\u200C\u200D",
  "\u2060",
  "\uFEFF",
  "\u00AD",
  "\u180E",
  " \u200B\t\u2060\n",
  "\u3000\u00A0\u202F",
  "\u202E\u2066",
  "\u3164",
  "\u2800",
  "\uFE0F",
  "\u{E0020}\u{E0041}",
  "\u0085\u2028\u2029",
] as const;
