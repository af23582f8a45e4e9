/**
 * The operation a request runs, found once per parsed document: the gateway reuses one parsed
 * document per query text, so the plugins that look for the operation on every request (metrics,
 * request report, cost, page size) share one lookup instead of walking the definitions each time.
 */
import { getOperationAST, type DocumentNode, type OperationDefinitionNode } from "graphql";

const operations = new WeakMap<DocumentNode, Map<string, OperationDefinitionNode | null>>();

/**
 * graphql-js `getOperationAST`, memoized by document and operation name.
 * @returns the operation definition, or null when the name matches none (or, without a name,
 *   the document holds several)
 */
export function operationOf(document: DocumentNode, operationName: string | null | undefined): OperationDefinitionNode | null {
  let byName = operations.get(document);
  if (!byName) {
    byName = new Map();
    operations.set(document, byName);
  }
  const key = operationName ?? "";
  let operation = byName.get(key);
  if (operation === undefined) {
    // A client chooses the names: keep at most a few per document.
    if (byName.size >= 16) byName.clear();
    operation = getOperationAST(document, operationName ?? undefined) ?? null;
    byName.set(key, operation);
  }
  return operation;
}
