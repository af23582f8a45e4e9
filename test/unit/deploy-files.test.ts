/**
 * The deployment files validate offline (README "Containers"): deploy/compose.yaml by Debian's
 * docker-compose (`config -q` checks it against the Compose schema it ships), every Kubernetes
 * object of deploy/k8s/ against the API's own schemas (kubernetes-models), and the rules this
 * project adds on top: probes on /livez and /readyz, secrets from the Secret, the HPA and the
 * PodDisruptionBudgets aimed at real Deployments, nginx's addresses all mapped in compose.
 */
import { execFile } from "node:child_process";
import fs from "node:fs";
import { promisify } from "node:util";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { parse, parseAllDocuments } from "yaml";
import { Namespace } from "kubernetes-models/v1/Namespace";
import { ConfigMap } from "kubernetes-models/v1/ConfigMap";
import { Secret } from "kubernetes-models/v1/Secret";
import { Service } from "kubernetes-models/v1/Service";
import { Deployment } from "kubernetes-models/apps/v1/Deployment";
import { HorizontalPodAutoscaler } from "kubernetes-models/autoscaling/v2/HorizontalPodAutoscaler";
import { PodDisruptionBudget } from "kubernetes-models/policy/v1/PodDisruptionBudget";

const run = promisify(execFile);
const file = (relative: string) => fileURLToPath(new URL(`../../${relative}`, import.meta.url));
const read = (relative: string) => fs.readFileSync(file(relative), "utf8");

/** The schema of each kind the manifests use (apiVersion/kind → a validating model). */
const MODELS: Record<string, new (data: any) => { validate(): void }> = {
  "v1/Namespace": Namespace,
  "v1/ConfigMap": ConfigMap,
  "v1/Secret": Secret,
  "v1/Service": Service,
  "apps/v1/Deployment": Deployment,
  "autoscaling/v2/HorizontalPodAutoscaler": HorizontalPodAutoscaler,
  "policy/v1/PodDisruptionBudget": PodDisruptionBudget,
};

/** Every object of the files kustomization.yaml applies, and of the example Secret. */
function k8sObjects(): { file: string; object: any }[] {
  const kustomization = parse(read("deploy/k8s/kustomization.yaml"));
  const files = [...kustomization.resources, "secret.example.yaml"] as string[];
  return files.flatMap((name) =>
    parseAllDocuments(read(`deploy/k8s/${name}`)).map((doc) => {
      expect(doc.errors, name).toEqual([]);
      return { file: name, object: doc.toJSON() };
    }),
  );
}

describe("deploy/compose.yaml", { timeout: 120_000 }, () => {
  const env = { ...process.env, SUBGRAPH_SECRET: "a".repeat(64), POSTGRES_PASSWORD: "p" };

  it("is a valid Compose file by docker-compose's own schema", async () => {
    const result = await run("docker-compose", ["-f", file("deploy/compose.yaml"), "config", "-q"], { env });
    expect(result.stderr).toBe("");
  });

  it("refuses to run without SUBGRAPH_SECRET or POSTGRES_PASSWORD, naming the variable", async () => {
    for (const missing of ["SUBGRAPH_SECRET", "POSTGRES_PASSWORD"]) {
      const without: NodeJS.ProcessEnv = { ...env };
      delete without[missing];
      await expect(run("docker-compose", ["-f", file("deploy/compose.yaml"), "config", "-q"], { env: without })).rejects.toThrow(new RegExp(`set ${missing}`));
    }
  });

  it("runs deploy/nginx.conf with every loopback address mapped to a service of the file", async () => {
    const compose = parse(read("deploy/compose.yaml"));
    const script: string = compose.services.nginx.command[2];
    const expressions = [...script.matchAll(/-e '([^']+)'/g)].map((m) => m[1]!);
    expect(expressions.length).toBeGreaterThan(3);
    const { stdout } = await run("sed", ["-E", ...expressions.flatMap((e) => ["-e", e]), file("deploy/nginx.conf")]);
    const servers = stdout
      .split("\n")
      .filter((line) => !line.trim().startsWith("#"))
      .join("\n");
    expect(servers).not.toMatch(/127\.0\.0\.1/);
    const upstreams = [...servers.matchAll(/^\s*server ([a-z0-9-]+):(\d+)/gm)].map((m) => [m[1]!, m[2]!]);
    expect(upstreams).toHaveLength(6);
    for (const [service, port] of upstreams) {
      const environment = compose.services[service!]?.environment ?? {};
      expect({ service, port: Object.values(environment).includes(port) }).toEqual({ service, port: true });
    }
  });
});

describe("deploy/k8s", () => {
  const objects = k8sObjects();
  const byKind = (kind: string) => objects.filter((o) => o.object.kind === kind).map((o) => o.object);

  it("holds only objects that validate against the Kubernetes API schemas of their apiVersion", () => {
    expect(objects.length).toBeGreaterThan(10);
    for (const { file: name, object } of objects) {
      const Model = MODELS[`${object.apiVersion}/${object.kind}`];
      expect({ file: name, kind: `${object.apiVersion}/${object.kind}`, known: Boolean(Model) }).toMatchObject({ known: true });
      expect(() => new Model!(object).validate(), `${name}: ${object.kind} ${object.metadata?.name}`).not.toThrow();
    }
  });

  it("runs a Deployment for the router and each subgraph, probed on /livez and /readyz of a port it declares", () => {
    const deployments = byKind("Deployment");
    expect(deployments.map((d) => d.metadata.name).sort()).toEqual(["cloud", "generation", "router"]);
    for (const deployment of deployments) {
      const [container] = deployment.spec.template.spec.containers;
      expect(container.args).toEqual(["start", deployment.metadata.name]);
      const ports = container.ports.map((p: any) => p.name);
      expect(container.livenessProbe.httpGet).toMatchObject({ path: "/livez" });
      expect(container.readinessProbe.httpGet).toMatchObject({ path: "/readyz" });
      expect(ports).toContain(container.readinessProbe.httpGet.port);
      expect(deployment.spec.template.spec.securityContext.runAsNonRoot).toBe(true);
    }
  });

  it("takes SUBGRAPH_SECRET, CHANNEL_KEY_SECRET and the database and Redis URLs from the Secret, never from the ConfigMap", () => {
    const secretKeys = Object.keys(byKind("Secret")[0].stringData);
    expect(secretKeys).toEqual(expect.arrayContaining(["SUBGRAPH_SECRET", "CHANNEL_KEY_SECRET", "DATABASE_URL", "REDIS_URL"]));
    const config = byKind("ConfigMap")[0].data;
    for (const key of secretKeys) expect(config).not.toHaveProperty(key);
    for (const deployment of byKind("Deployment")) {
      const [container] = deployment.spec.template.spec.containers;
      const fromSecret = [
        ...(container.envFrom ?? []).filter((e: any) => e.secretRef?.name === "switchyard").map(() => "*"),
        ...(container.env ?? []).filter((e: any) => e.valueFrom?.secretKeyRef).map((e: any) => e.valueFrom.secretKeyRef.key),
      ];
      expect(fromSecret.length, deployment.metadata.name).toBeGreaterThan(0);
      for (const key of fromSecret) if (key !== "*") expect(secretKeys).toContain(key);
    }
  });

  it("scales the router with an HPA and keeps each Deployment up through voluntary disruptions", () => {
    const [hpa] = byKind("HorizontalPodAutoscaler");
    expect(hpa.spec.scaleTargetRef).toEqual({ apiVersion: "apps/v1", kind: "Deployment", name: "router" });
    const deployments = byKind("Deployment");
    const budgets = byKind("PodDisruptionBudget");
    for (const deployment of deployments) {
      const labels = deployment.spec.template.metadata.labels;
      const covering = budgets.filter((b) => Object.entries(b.spec.selector.matchLabels).every(([k, v]) => labels[k] === v));
      expect({ deployment: deployment.metadata.name, budgets: covering.length }).toEqual({ deployment: deployment.metadata.name, budgets: 1 });
    }
    for (const service of byKind("Service")) {
      const selected = deployments.filter((d) => Object.entries(service.spec.selector).every(([k, v]) => d.spec.template.metadata.labels[k] === v));
      expect(selected.map((d) => d.metadata.name)).toEqual([service.metadata.name]);
    }
  });
});

describe("Dockerfile", () => {
  const dockerfile = read("Dockerfile");

  it("installs production dependencies only, runs as a non-root user under tini and checks health on /readyz", () => {
    expect(dockerfile).toMatch(/^FROM \$\{NODE_IMAGE\} AS build$/m);
    expect(dockerfile).toMatch(/^ARG NODE_IMAGE=node:26-bookworm-slim$/m);
    expect(dockerfile).toMatch(/npm ci --omit=dev/);
    expect(dockerfile).toMatch(/^USER switchyard$/m);
    expect(dockerfile).toMatch(/^ENTRYPOINT \["\/usr\/bin\/tini", "--", /m);
    expect(dockerfile).toMatch(/^HEALTHCHECK .*deploy\/healthcheck\.mjs/m);
    expect(read("deploy/healthcheck.mjs")).toMatch(/\/readyz/);
  });
});
