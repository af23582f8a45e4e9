/**
 * The embedded simulator (docs/architecture.md §5): the default upstream. Takes a task through
 * 4 → 0 → 3 → 1 one step per `stepMs`; a prompt containing `#fail` ends in 2, and an image
 * prompt containing `#partial` generates one image fewer than asked (a sandbox hook, like a
 * payment sandbox's magic values). Stateless: the provider task id carries everything the
 * simulator needs, so it survives restarts and is shared by every instance.
 */
import { UpstreamError, type GenerationUpstream, type UpstreamTaskState } from "./types.ts";

/** Settings of the simulator. */
export interface SimulatorOptions {
  /** Milliseconds per status step. */
  stepMs: number;
  /** Base URL of the router, where the placeholder media is served (`/media/sim/...`). */
  mediaBaseUrl: () => string;
}

/**
 * Creates the simulator.
 * @returns a {@link GenerationUpstream} that never fails a submission
 */
export function createSimulatorUpstream(options: SimulatorOptions): GenerationUpstream {
  return {
    name: "simulator",
    async submit(request, taskId) {
      const fail = request.prompt.includes("#fail") ? 1 : 0;
      const produced = request.kind === "image" && request.prompt.includes("#partial") ? Math.max(0, request.count - 1) : request.count;
      return { upstreamTaskId: ["sim", taskId, Date.now().toString(36), fail, request.kind, produced].join(".") };
    },
    async fetchStatus(upstreamTaskId) {
      const [tag, taskId, startedAt, fail, kind, produced] = upstreamTaskId.split(".");
      if (tag !== "sim" || !taskId) throw new UpstreamError("failed", "not a simulator task");
      const elapsed = Date.now() - parseInt(startedAt!, 36);
      const step = Math.max(1, options.stepMs);
      if (elapsed < step) return { status: 4 };
      if (elapsed < 2 * step) return { status: 0 };
      if (elapsed < 3 * step) return { status: 3 };
      if (fail === "1") return { status: 2, error: "Simulated generation failure (#fail)" };
      const base = `${options.mediaBaseUrl()}/media/sim/${taskId}`;
      if (kind === "image") {
        const images = Array.from({ length: Number(produced) }, (_, i) => `${base}-${i + 1}.svg`);
        const state: UpstreamTaskState = { status: 1, images, result: images[0] ?? null };
        return state;
      }
      return { status: 1, result: `${base}.mp4` };
    },
  };
}
