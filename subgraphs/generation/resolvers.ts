/**
 * Resolvers of the generation subgraph (subgraphs/generation/schema.graphql). Thin: every rule lives in
 * src/generation; these only translate arguments and shapes.
 */
import { MODELS, getModel, type ModelSpec } from "../../src/generation/catalog.ts";
import { quote } from "../../src/generation/pricing.ts";
import type { ImageGenerationInput, PriceParams, VideoGenerationInput } from "../../src/generation/validation.ts";
import { isTerminal, type TaskRecord } from "../../src/generation/tasks/index.ts";
import type { OutboxMessage } from "../../src/events/pubsub.ts";
import { recentRequests, usageByDay, usageDays } from "../../src/generation/usage.ts";
import { AppError, isAppError } from "../../src/errors.ts";
import { formatYuan, toMoney } from "../../src/money.ts";
import { pageSize } from "../../src/pagination.ts";
import { pageOf, toConnection, type PageArgs } from "../shared/connection.ts";
import { keyEventStream } from "../shared/key-events.ts";
import type { GenerationContext } from "./context.ts";
import { channelMutations, channelQueries } from "./channels.ts";
import { DateTime } from "../shared/scalars.ts";
import { adminOverviewQueries } from "./admin-overview.ts";
import type { TypeScope } from "../shared/scopes.ts";

/** Enum names of the status codes 0-4 (docs/api/generation.md §3). */
export const TASK_STATUS_ENUM = ["QUEUED", "SUCCEEDED", "FAILED", "PROCESSING", "SUBMITTED"] as const;

/** Localized status labels (docs/architecture.md §5). */
export const STATUS_NAMES = {
  zh: ["排队中", "生成成功", "生成失败", "处理中", "已提交"],
  en: ["Queued", "Succeeded", "Failed", "Processing", "Submitted"],
} as const;

function statusCodeOf(status: string | null | undefined): number | null {
  if (status == null) return null;
  return TASK_STATUS_ENUM.indexOf(status as (typeof TASK_STATUS_ENUM)[number]);
}

/** The arguments of a `tasks` connection field. */
type TaskPageArgs = PageArgs & { status?: string | null };

async function taskConnection(ctx: GenerationContext, args: TaskPageArgs) {
  const caller = await ctx.caller();
  const page = await ctx.service.listTasks(caller, { ...pageOf(args), status: statusCodeOf(args.status) });
  for (const task of page.items) ctx.taskLoader.prime(task.id, task);
  return toConnection(page);
}

/**
 * A task as it was at one status change: the fresh row for what never changes (model, price,
 * prompt), the event's own fields for what the change set. Events carry the publishing
 * subgraph's fields, so they are never stale joins.
 */
function taskAtEvent(row: TaskRecord, event: OutboxMessage): TaskRecord {
  // The payload of a `task.status_changed` event (src/generation/tasks/records.ts).
  const p = event.payload as {
    status: TaskRecord["status"];
    result?: string | null;
    images?: string[] | null;
    error?: string | null;
    refunded?: number | string;
    updated_at?: string;
  };
  return {
    ...row,
    status: p.status,
    result: p.result ?? null,
    images: p.images ?? null,
    error: p.error ?? null,
    refunded: Number(p.refunded ?? row.refunded),
    updatedAt: p.updated_at ?? row.updatedAt,
  };
}

/** Status-change events of the caller's key (a task is visible only to its key), until the key is disabled. */
function taskEvents(ctx: GenerationContext, caller: { accountId: string; keyId: string }, taskId?: string) {
  return keyEventStream(
    ctx.pubsub,
    ctx.db,
    caller,
    (e) => e.topic === "task.status_changed" && e.payload.key_id === caller.keyId && (!taskId || e.aggregateId === taskId),
  );
}

/**
 * The task row behind one event, read once for every `tasks` subscription of the key that
 * receives the event (they all see the same row): with thousands of subscribers on one key an
 * event would otherwise cost a database read per subscriber. Kept a second, then forgotten.
 */
const eventReads = new Map<string, Promise<TaskRecord | null>>();
function taskForEvent(ctx: GenerationContext, caller: Awaited<ReturnType<GenerationContext["caller"]>>, event: OutboxMessage): Promise<TaskRecord | null> {
  const key = `${event.id}:${caller.keyId}`;
  let read = eventReads.get(key);
  if (!read) {
    read = ctx.service.getTask(caller, event.aggregateId).catch(() => null);
    eventReads.set(key, read);
    setTimeout(() => eventReads.delete(key), 1000).unref();
  }
  return read;
}

/**
 * The scope each type's data needs, wherever it is reached from (README "Scopes", ADR 0007;
 * applied by `scopeTypes` in server.ts). `Account` is not here: each of its fields checks its
 * own scope (`viewer` needs any valid key); `Model` is public.
 */
export const TYPE_SCOPES: Record<string, TypeScope> = {
  Task: { scope: "generation", open: ["id"] },
  RequestRecord: { scope: "generation" },
};

export const resolvers = {
  DateTime,
  Query: {
    ...channelQueries,
    models: () => MODELS,
    model: (_: unknown, { id }: { id: number }) => getModel(id) ?? null,
    task: async (_: unknown, { id }: { id: string }, ctx: GenerationContext) => {
      await ctx.caller();
      const task = await ctx.taskLoader.load(id);
      if (!task) throw new AppError("task_not_found");
      return task;
    },
    tasks: (_: unknown, args: TaskPageArgs, ctx: GenerationContext) => taskConnection(ctx, args),
    viewer: async (_: unknown, __: unknown, ctx: GenerationContext) => ({ id: (await ctx.anyCaller()).accountId }),
    ...adminOverviewQueries,
  },
  Mutation: {
    ...channelMutations,
    submitVideoGeneration: async (_: unknown, { input }: { input: VideoGenerationInput }, ctx: GenerationContext) => ({
      task: await ctx.service.submit(await ctx.caller(), "video", input),
    }),
    submitImageGeneration: async (_: unknown, { input }: { input: ImageGenerationInput }, ctx: GenerationContext) => ({
      task: await ctx.service.submit(await ctx.caller(), "image", input),
    }),
  },
  Subscription: {
    taskStatusChanged: {
      /**
       * Subscribes first, then reads the current state, so no change between the two is missed;
       * changes older than what was already sent are skipped, so events arrive in order. Auth and
       * visibility are checked before the stream starts, so a refusal is a plain GraphQL error.
       */
      subscribe: async (_: unknown, { taskId }: { taskId: string }, ctx: GenerationContext) => {
        const caller = await ctx.caller();
        const stream = taskEvents(ctx, caller, taskId);
        let task: TaskRecord;
        try {
          await stream.ready; // with Redis, SUBSCRIBE acknowledged before the state is read
          task = await ctx.service.getTask(caller, taskId);
        } catch (error) {
          stream.close();
          throw error;
        }
        return (async function* () {
          try {
            // Each event's fields are resolved on a database budget of their own.
            ctx.budget.renew();
            yield { taskStatusChanged: task };
            if (isTerminal(task.status)) return;
            for await (const event of stream) {
              const next = taskAtEvent(task, event);
              if (next.updatedAt <= task.updatedAt) continue;
              task = next;
              ctx.budget.renew();
              yield { taskStatusChanged: task };
              if (isTerminal(task.status)) return;
            }
            // The key was disabled: its last result is that error.
            if (stream.revoked) yield { taskStatusChanged: stream.revoked };
          } finally {
            stream.close();
          }
        })();
      },
    },
    tasks: {
      subscribe: async (_: unknown, __: unknown, ctx: GenerationContext) => {
        const caller = await ctx.caller();
        const stream = taskEvents(ctx, caller);
        await stream.ready;
        return (async function* () {
          try {
            for await (const event of stream) {
              const row = await taskForEvent(ctx, caller, event);
              if (!row) continue;
              ctx.budget.renew();
              yield { tasks: taskAtEvent(row, event) };
            }
            if (stream.revoked) yield { tasks: stream.revoked };
          } finally {
            stream.close();
          }
        })();
      },
    },
  },
  Account: {
    // Any valid key (its fields check ownership and their own scope); none: 401.
    __resolveReference: async (ref: { id: string }, ctx: GenerationContext) => {
      await ctx.anyCaller();
      return { id: ref.id };
    },
    balance: async (account: { id: string }, _: unknown, ctx: GenerationContext) =>
      (await ctx.ownAccount(account.id)) ? toMoney(await ctx.usage.balance()) : null,
    spent: async (account: { id: string }, _: unknown, ctx: GenerationContext) =>
      (await ctx.ownAccount(account.id)) ? toMoney(await ctx.usage.spent()) : null,
    billedSeconds: async (account: { id: string }, _: unknown, ctx: GenerationContext) =>
      (await ctx.ownAccount(account.id)) ? await ctx.usage.billedSeconds() : null,
    billedImages: async (account: { id: string }, _: unknown, ctx: GenerationContext) =>
      (await ctx.ownAccount(account.id)) ? await ctx.usage.billedImages() : null,
    tasks: async (account: { id: string }, args: TaskPageArgs, ctx: GenerationContext) =>
      (await ctx.ownAccount(account.id)) ? taskConnection(ctx, args) : null,
    recentRequests: async (account: { id: string }, args: { first?: number }, ctx: GenerationContext) => {
      const caller = await ctx.ownAccount(account.id);
      return caller ? recentRequests(ctx.db, caller, pageSize(args.first)) : null;
    },
    usageByDay: async (account: { id: string }, args: { days?: number | null }, ctx: GenerationContext) => {
      const days = usageDays(args.days);
      const caller = await ctx.ownAccount(account.id);
      if (!caller) return null;
      return (await usageByDay(ctx.db, caller, days)).map((day) => ({ ...day, spent: toMoney(day.spent) }));
    },
  },
  Task: {
    __resolveReference: async (ref: { id: string }, ctx: GenerationContext) => ((await ctx.callerOrNull()) ? ctx.taskLoader.load(ref.id) : null),
    status: (task: TaskRecord) => TASK_STATUS_ENUM[task.status],
    statusCode: (task: TaskRecord) => task.status,
    statusName: (task: TaskRecord, _: unknown, ctx: GenerationContext) => STATUS_NAMES[ctx.locale][task.status],
    price: (task: TaskRecord) => toMoney(task.price),
    refunded: (task: TaskRecord) => toMoney(task.refunded),
    charged: (task: TaskRecord) => toMoney(task.price - task.refunded),
    model: (task: TaskRecord) => getModel(task.modelId),
  },
  Model: {
    kind: (model: ModelSpec) => model.kind.toUpperCase(),
    durations: (model: ModelSpec) => Object.entries(model.durations ?? {}).map(([resolution, seconds]) => ({ resolution, seconds })),
    available: () => true,
    pricing: (model: ModelSpec) => {
      const p = model.pricing;
      if (p.kind === "per_second") {
        return { kind: p.kind, perSecond: Object.entries(p.milliPerSecond).map(([resolution, milli]) => ({ resolution, price: toMoney(milli) })) };
      }
      if (p.kind === "points") {
        return {
          kind: p.kind,
          pointsPerSecond: Object.entries(p.pointsRateTenths).map(([resolution, tenths]) => ({
            resolution,
            rate: formatYuan(tenths * 100).replace(/\.?0+$/, ""),
          })),
          pricePerPoint: toMoney(p.milliPerPoint),
        };
      }
      return { kind: p.kind, perImage: toMoney(p.milliPerImage) };
    },
    quote: (model: ModelSpec, args: PriceParams) => {
      try {
        return toMoney(quote(model, args));
      } catch (error) {
        if (isAppError(error)) return null; // parameters the model does not take have no price
        throw error;
      }
    },
  },
};
