/** `switchyard channels …`: add, list, update, disable, enable, test (README "Channels"). */
import type { Command } from "commander";
import type { ChannelInput, ChannelRecord } from "../../src/generation/channels/store.ts";
import { group, integerOption, list, table, UsageError, withDb, type Act } from "./shared.ts";

/** A channel as `--json` prints it (never its key). */
function channelJson(c: ChannelRecord) {
  const { sealedKey: _key, ...shown } = c;
  return shown;
}

/** Options shared by add and update, read into a {@link ChannelInput}. */
function inputOf(values: {
  name?: string;
  baseUrl?: string;
  apiKey?: string;
  models?: string;
  map?: string;
  priority?: string;
  weight?: string;
}): ChannelInput {
  // Any whole number here; the ranges are the domain's (src/generation/channels/store.ts).
  const whole = (value: string | undefined, name: string) => integerOption(value, name);
  const models = list(values.models)?.map((m) => whole(m, "models")!);
  const modelMapping = list(values.map)?.map((pair) => {
    const [modelId, upstreamModel] = pair.split("=");
    if (!modelId || !upstreamModel) throw new UsageError("--map takes MODEL_ID=UPSTREAM_MODEL pairs, comma-separated");
    return { modelId: whole(modelId, "map")!, upstreamModel };
  });
  return {
    name: values.name,
    baseUrl: values.baseUrl,
    apiKey: values.apiKey,
    models,
    modelMapping,
    priority: whole(values.priority, "priority"),
    weight: whole(values.weight, "weight"),
  };
}

const fieldOptions = (command: Command) =>
  command
    .option("--name <N>", "the operator's name for it")
    .option("--base-url <URL>", "the provider's base URL (http or https)")
    .option("--api-key <KEY>", "the provider's key (stored encrypted with CHANNEL_KEY_SECRET)")
    .option("--models <ID,...>", "our model ids it serves, comma-separated")
    .option("--map <ID=NAME,...>", "model ids sent upstream under another name")
    .option("--priority <N>", "higher is tried first (default 0)")
    .option("--weight <N>", "1-1000: share inside its priority group (default 1)")
    .option("--json", "print the channel as JSON");

/** Registers `channels` and its subcommands on the program. */
export function registerChannelCommands(program: Command, act: Act): void {
  const channels = group(program, "channels", "upstream channels: add, list, update, disable, enable, test");
  const print = (channel: ChannelRecord, json?: boolean) =>
    console.log(
      json
        ? JSON.stringify(channelJson(channel))
        : `${channel.id}  ${channel.name}  ${channel.status}  priority ${channel.priority}  weight ${channel.weight}  ${channel.baseUrl}`,
    );
  const box = async (config: { channelKeySecret?: string }) => (await import("../../src/generation/channels/index.ts")).keyBoxFor(config);

  act(fieldOptions(channels.command("add").description("add a channel (enabled); needs CHANNEL_KEY_SECRET")), async function () {
    const values = this.opts();
    const input = inputOf(values);
    for (const [field, option] of [
      ["name", "--name"],
      ["baseUrl", "--base-url"],
      ["apiKey", "--api-key"],
      ["models", "--models"],
    ] as const) {
      if (input[field] === undefined) throw new UsageError(`channels add needs ${option}`);
    }
    await withDb(async (db, config) => {
      const { addChannel } = await import("../../src/generation/channels/store.ts");
      print(await addChannel(db, await box(config), input as Parameters<typeof addChannel>[2]), values.json);
    });
  });
  act(
    channels.command("list").description("list channels, highest priority first, with their health and figures").option("--json", "print a JSON array"),
    async function () {
      const values = this.opts<{ json?: boolean }>();
      await withDb(async (db) => {
        const { listChannels, openTasksByChannel } = await import("../../src/generation/channels/store.ts");
        const [rows, open] = await Promise.all([listChannels(db), openTasksByChannel(db)]);
        if (values.json) return console.log(JSON.stringify(rows.map((c) => ({ ...channelJson(c), open_tasks: open.get(c.id) ?? 0 }))));
        const rate = (c: ChannelRecord) => (c.submissions ? `${((100 * c.successes) / c.submissions).toFixed(1)}%` : "-");
        console.log(
          table([
            ["ID", "NAME", "STATUS", "PRIORITY", "WEIGHT", "MODELS", "TRIED", "OK", "OPEN", "NEXT PROBE", "BASE URL"],
            ...rows.map((c) => [
              c.id,
              c.name,
              c.status,
              String(c.priority),
              String(c.weight),
              c.models?.join(",") ?? "all",
              String(c.submissions),
              rate(c),
              String(open.get(c.id) ?? 0),
              c.nextProbeAt ?? "-",
              c.baseUrl,
            ]),
          ]),
        );
      });
    },
  );
  act(fieldOptions(channels.command("update").description("change the given fields of a stored channel").argument("<CHANNEL_ID>")), async function (id) {
    const values = this.opts();
    await withDb(async (db, config) => {
      const { updateChannel } = await import("../../src/generation/channels/store.ts");
      print(await updateChannel(db, await box(config), id!, inputOf(values)), values.json);
    });
  });
  for (const [name, enabled] of [
    ["disable", false],
    ["enable", true],
  ] as const) {
    act(
      channels
        .command(name)
        .description(enabled ? "take new tasks again (failure count reset)" : "take no new tasks (within a second on every process)")
        .argument("<CHANNEL_ID>")
        .option("--json", "print the channel as JSON"),
      async function (id) {
        const values = this.opts<{ json?: boolean }>();
        await withDb(async (db) => {
          const { setChannelStatus } = await import("../../src/generation/channels/store.ts");
          print(await setChannelStatus(db, id!, enabled), values.json);
        });
      },
    );
  }
  act(
    channels
      .command("test")
      .description("probe a channel now (no task, no charge); an auto-disabled one that answers is enabled; exit 1 when it fails")
      .argument("<CHANNEL_ID>")
      .option("--json", "print {ok, latency_ms, error} as JSON"),
    async function (id) {
      const values = this.opts<{ json?: boolean }>();
      return withDb(async (db, config) => {
        const { getChannel, setChannelStatus } = await import("../../src/generation/channels/store.ts");
        const { probeAdapter } = await import("../../src/generation/channels/probe.ts");
        const { createHttpUpstream } = await import("../../src/generation/upstream/http.ts");
        const channel = await getChannel(db, id!);
        const keys = await box(config);
        let result: Awaited<ReturnType<typeof probeAdapter>>;
        if (channel.implicit && !config.upstreamUrl)
          result = { ok: true, latencyMs: 0, error: null }; // the simulator always answers
        else if (!channel.implicit && (!keys || !channel.sealedKey))
          result = { ok: false, latencyMs: 0, error: "CHANNEL_KEY_SECRET is not set: the key cannot be read" };
        else {
          const apiKey = channel.implicit ? config.upstreamKey : keys!.open(channel.sealedKey!);
          result = await probeAdapter(createHttpUpstream({ baseUrl: channel.baseUrl, apiKey, timeoutMs: config.upstreamTimeoutMs }));
        }
        if (result.ok && channel.status === "AUTO_DISABLED") await setChannelStatus(db, channel.id, true);
        if (values.json) console.log(JSON.stringify({ id: channel.id, ok: result.ok, latency_ms: result.latencyMs, error: result.error }));
        else console.log(result.ok ? `${channel.id}: ok in ${result.latencyMs} ms` : `${channel.id}: failed: ${result.error}`);
        return result.ok ? 0 : 1;
      });
    },
  );
}
