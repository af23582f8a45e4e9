/**
 * The one rule for "blank" text (README "Input limits"; docs/api/generation.md §7 `prompt must be a
 * non-empty string`): a text is blank when it holds no character a reader can see. `String.trim`
 * is not that rule: it keeps U+200B ZERO WIDTH SPACE, U+2060 WORD JOINER, U+00AD SOFT HYPHEN,
 * U+180E MONGOLIAN VOWEL SEPARATOR and the other format characters, so a prompt of only those was
 * sent upstream (and paid for) as if it said something.
 */

/**
 * Every character that shows nothing, by Unicode property rather than by a hand list:
 * `White_Space` (spaces of every width, line and paragraph separators, tab, CR, LF, U+0085),
 * `Cc` (control characters), `Cf` (format characters: U+200B-U+200F, U+202A-U+202E, U+2060-U+2064,
 * U+FEFF, U+00AD, U+180E, tags...), `Default_Ignorable_Code_Point` (also U+034F, the Hangul
 * fillers U+115F, U+1160, U+3164, U+FFA0 and the variation selectors), and U+2800 BRAILLE PATTERN
 * BLANK, a symbol drawn as nothing.
 */
const INVISIBLE = "\\p{White_Space}\\p{Cc}\\p{Cf}\\p{Default_Ignorable_Code_Point}\\u2800";
const BLANK = new RegExp(`^[${INVISIBLE}]*$`, "u");
const ANY_INVISIBLE = new RegExp(`[${INVISIBLE}]`, "u");

/**
 * Whether a text is blank: empty, or only white space and invisible characters ({@link BLANK}).
 * @param text any string (a lone surrogate half is visible: it is shown as U+FFFD)
 */
export function isBlank(text: string): boolean {
  return BLANK.test(text);
}

/**
 * Whether a text holds any character of {@link BLANK}'s set: white space, a control or format
 * character, a default-ignorable one. Identifiers a client chooses (`customer_id`,
 * `client_order_no`) have none, so two ids that look the same are the same id.
 */
export function hasInvisible(text: string): boolean {
  return ANY_INVISIBLE.test(text);
}
