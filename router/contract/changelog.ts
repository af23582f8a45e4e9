/**
 * What CHANGELOG.md (Keep a Changelog) tells the contract check: which breaking changes the next
 * release announces. An entry of the `## [Unreleased]` section (a top-level `- ` bullet with its
 * indented lines) that carries a migration note (`*Migration*: …`) announces every coordinate it
 * names in backticks: `Task.createdAt`, `Query.tasks(first:)`, `GET /api/v1/tasks/{task_id}
 * response 200 data.status` (the forms: router/contract/changes.ts).
 */

/** The `## [Unreleased]` heading. */
const UNRELEASED = /^## \[Unreleased\][^\n]*\n/im;
/** A migration note inside an entry. */
const MIGRATION_NOTE = /\bmigration\b[*_]*\s*:/i;

/** A coordinate as written, compared with spaces collapsed; `Type.field(arg: Int = 1)` counts as `Type.field(arg:)`. */
export function normalizeCoordinate(text: string): string {
  const collapsed = text.trim().replace(/\s+/g, " ");
  return collapsed.replace(/^(\w+\.\w+)\((\w+):[^)]*\)$/, "$1($2:)");
}

/** The text of the Unreleased section (empty when there is none). */
export function unreleasedSection(changelog: string): string {
  const heading = UNRELEASED.exec(changelog);
  if (!heading) return "";
  const rest = changelog.slice(heading.index + heading[0].length);
  const next = /^## /m.exec(rest);
  return next ? rest.slice(0, next.index) : rest;
}

/**
 * The coordinates that Unreleased entries with a migration note name.
 * @param changelog CHANGELOG.md's text
 * @returns normalized coordinates ({@link normalizeCoordinate})
 */
export function announcedCoordinates(changelog: string): Set<string> {
  const announced = new Set<string>();
  // Entries: a line starting "- " at the margin opens one; a heading closes it.
  const entries = unreleasedSection(changelog)
    .split(/^(?=- |#)/m)
    .filter((entry) => entry.startsWith("- "));
  for (const entry of entries) {
    if (!MIGRATION_NOTE.test(entry)) continue;
    for (const [, span] of entry.replace(/\s+/g, " ").matchAll(/`([^`]+)`/g)) announced.add(normalizeCoordinate(span!));
  }
  return announced;
}

/**
 * CHANGELOG.md with its Unreleased entries moved under a release heading, and an empty
 * Unreleased section above it.
 * @param version the release's version (semver, "0.2.0")
 * @param date its day, `YYYY-MM-DD`
 * @throws Error when there is no Unreleased section
 */
export function releaseChangelog(changelog: string, version: string, date: string): string {
  const heading = UNRELEASED.exec(changelog);
  if (!heading) throw new Error("CHANGELOG.md has no ## [Unreleased] section");
  const at = heading.index + heading[0].length;
  return `${changelog.slice(0, at)}\n## [${version}] - ${date}\n${changelog.slice(at)}`;
}
