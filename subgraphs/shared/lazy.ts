/**
 * Per-request helpers built on first use (docs/architecture.md §7 context): a request, or a subscription that
 * lives for hours, that never asks for a DataLoader or a usage reader never builds one.
 */

/**
 * Adds properties to `target` whose values are made on first read and kept.
 * @param makers one factory per property
 * @returns `target`, typed with the added properties
 */
export function withLazy<T extends object, L extends object>(target: T, makers: { [K in keyof L]: () => L[K] }): T & L {
  for (const name of Object.keys(makers) as (keyof L & string)[]) {
    Object.defineProperty(target, name, {
      configurable: true,
      enumerable: true,
      get() {
        const value = makers[name]();
        Object.defineProperty(target, name, { value, enumerable: true, writable: false });
        return value;
      },
    });
  }
  return target as T & L;
}
