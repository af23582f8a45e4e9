/** The roles a process can run (`switchyard start [ROLES]`; docs/architecture.md §2). */

/** A process role. */
export type Role = "router" | "generation" | "cloud";

/** Every role, in start order. */
export const ALL_ROLES: readonly Role[] = ["generation", "cloud", "router"];
