// The container's HEALTHCHECK (Dockerfile; docs/adr/0015-readiness-and-containers.md): healthy
// when every Switchyard port of this container that answers says ready. A process runs one or
// more roles, so it probes PORT, GENERATION_PORT and CLOUD_PORT (defaults 4000, 4001, 4002): a
// port nobody listens on belongs to a role this container does not run and is skipped; any
// answer but 200 from /readyz is unhealthy, and so is no answer at all. Plain JavaScript: it
// runs every few seconds and must not load the TypeScript loader.
const env = process.env;
const ports = new Set([env.PORT || "4000", env.GENERATION_PORT || "4001", env.CLOUD_PORT || "4002"]);
const results = await Promise.all(
  [...ports].map((port) =>
    fetch(`http://127.0.0.1:${port}/readyz`, { signal: AbortSignal.timeout(4000) }).then(
      (response) => (response.status === 200 ? "ready" : "unready"),
      (error) => (error?.cause?.code === "ECONNREFUSED" ? "absent" : "unready"),
    ),
  ),
);
process.exit(results.includes("ready") && !results.includes("unready") ? 0 : 1);
