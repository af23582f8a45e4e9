/**
 * The ports a `switchyard start` binds, checked before the servers listen, so a port in use is
 * one line naming its variable and address rather than a server's error and stack traces.
 */
import net from "node:net";
import { ConfigError, type Config } from "../src/config.ts";
import type { Role } from "./roles.ts";

/** A port this process listens on, and the variable that sets it. */
interface Listener {
  variable: "PORT" | "GENERATION_PORT" | "CLOUD_PORT";
  port: number;
}

/** The ports the given roles listen on (port 0, any free port, is left out: it cannot be taken). */
function listenersOf(config: Pick<Config, "port" | "generationPort" | "cloudPort">, roles: readonly Role[]): Listener[] {
  const all: (Listener & { role: Role })[] = [
    { role: "generation", variable: "GENERATION_PORT", port: config.generationPort },
    { role: "cloud", variable: "CLOUD_PORT", port: config.cloudPort },
    { role: "router", variable: "PORT", port: config.port },
  ];
  return all.filter((l) => roles.includes(l.role) && l.port !== 0).map(({ variable, port }) => ({ variable, port }));
}

/** A listen error (EADDRINUSE, EACCES, EADDRNOTAVAIL) as one line naming the variable and the address. */
function listenProblem(variable: string, host: string, port: number, error: NodeJS.ErrnoException): ConfigError {
  const address = `${host}:${port}`;
  switch (error.code) {
    case "EADDRINUSE":
      return new ConfigError(`${variable}: ${address} is already in use; stop what listens there or set ${variable} to another port`);
    case "EACCES":
      return new ConfigError(`${variable}: ${address} may not be bound by this user (ports below 1024 need privileges); set ${variable} to another port`);
    case "EADDRNOTAVAIL":
      return new ConfigError(`HOST: ${host} is not an address of this machine (binding ${variable} ${address})`);
    default:
      return new ConfigError(`${variable}: cannot listen on ${address}: ${error.message}`);
  }
}

/**
 * Checks that no two servers of the roles share a port (without binding anything: `config check`).
 * @throws ConfigError naming both variables
 */
export function assertDistinctPorts(config: Pick<Config, "port" | "generationPort" | "cloudPort">, roles: readonly Role[]): void {
  const listeners = listenersOf(config, roles);
  for (const [i, a] of listeners.entries()) {
    const b = listeners.slice(i + 1).find((other) => other.port === a.port);
    if (b) throw new ConfigError(`${a.variable} and ${b.variable} are both ${a.port}: each server needs its own port`);
  }
}

/**
 * Checks that every port the roles listen on can be bound on HOST, by binding and closing it.
 * @throws ConfigError naming the variable and the address: two variables with one port, a port
 *   in use, a privileged port, a HOST that is not local
 */
export async function assertPortsFree(config: Pick<Config, "host" | "port" | "generationPort" | "cloudPort">, roles: readonly Role[]): Promise<void> {
  assertDistinctPorts(config, roles);
  for (const { variable, port } of listenersOf(config, roles)) {
    await new Promise<void>((resolve, reject) => {
      const probe = net.createServer();
      probe.once("error", (error: NodeJS.ErrnoException) => reject(listenProblem(variable, config.host, port, error)));
      probe.listen({ port, host: config.host, exclusive: true }, () => probe.close(() => resolve()));
    });
  }
}

/**
 * The one-line form of an error a server's `listen` threw (a port taken between
 * {@link assertPortsFree} and the listen), or null for any other error.
 */
export function describeListenError(
  error: unknown,
  config: Pick<Config, "host" | "port" | "generationPort" | "cloudPort">,
  roles: readonly Role[],
): ConfigError | null {
  const e = error as NodeJS.ErrnoException & { port?: number; address?: string };
  if (e?.syscall !== "listen" || typeof e.port !== "number") return null;
  const listener = listenersOf(config, roles).find((l) => l.port === e.port);
  return listener ? listenProblem(listener.variable, e.address ?? config.host, e.port, e) : null;
}
