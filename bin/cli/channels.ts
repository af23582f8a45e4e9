/** `switchyard channels …`: add, list, update, disable, enable, test (README "Channels"). */
import { readFile } from "node:fs/promises";
import type { Command } from "commander";
import type { ChannelInput, ChannelRecord } from "../../src/generation/channels/store.ts";
import { group, integerOption, list, table, UsageError, withDb, type Act } from "./shared.ts";

/** A channel as `--json` prints it (never its key). */
function channelJson(c: ChannelRecord) {
  const { sealedKey: _key, ...shown } = c;
  return shown;
}

/** Where `channels add|update` may read the provider's key from (one of them). */
interface KeySources {
  apiKey?: string;
  apiKeyFile?: string;
  apiKeyStdin?: boolean;
  apiKeyEnv?: string;
}

/**
 * The provider's key from the one source given: `--api-key-file FILE`, `--api-key-stdin` (as
 * `docker login --password-stdin`), `--api-key-env NAME`, or `--api-key KEY` (which the process
 * list and the shell history show: a warning on stderr says so). Trailing line breaks of a file
 * or stdin are dropped.
 * @returns the key, or undefined when no source was given
 * @throws UsageError for two sources, an unset variable or an empty key; Error when the file cannot be read
 */
async function readApiKey(values: KeySources): Promise<string | undefined> {
  const given = (["apiKey", "apiKeyFile", "apiKeyStdin", "apiKeyEnv"] as const).filter((k) => values[k] !== undefined);
  if (given.length > 1) throw new UsageError("give the key once: --api-key-file, --api-key-stdin, --api-key-env or --api-key");
  let key: string;
  let source: string;
  if (values.apiKeyFile !== undefined) {
    source = `--api-key-file ${values.apiKeyFile}`;
    try {
      key = await readFile(values.apiKeyFile, "utf8");
    } catch (error) {
      throw new Error(`cannot read ${source}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
    }
  } else if (values.apiKeyStdin) {
    source = "--api-key-stdin";
    const chunks: Buffer[] = [];
    for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
    key = Buffer.concat(chunks).toString("utf8");
  } else if (values.apiKeyEnv !== undefined) {
    source = `--api-key-env ${values.apiKeyEnv}`;
    const value = process.env[values.apiKeyEnv];
    if (value === undefined) throw new UsageError(`${source}: the variable is not set`);
    key = value;
  } else if (values.apiKey !== undefined) {
    process.stderr.write("warning: --api-key is visible in the process list and the shell history; prefer --api-key-file or --api-key-stdin\n");
    return values.apiKey;
  } else {
    return undefined;
  }
  key = key.replace(/[\r\n]+$/, "");
  if (!key) throw new UsageError(`${source}: the key is empty`);
  return key;
}

/** Options shared by add and update, read into a {@link ChannelInput}. */
function inputOf(values: { name?: string; baseUrl?: string; models?: string; map?: string; priority?: string; weight?: string }): ChannelInput {
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
    .option("--api-key-file <FILE>", "read the provider's key from FILE (stored encrypted with CHANNEL_KEY_SECRET)")
    .option("--api-key-stdin", "read the provider's key from stdin")
    .option("--api-key-env <NAME>", "read the provider's key from the environment variable NAME")
    .option("--api-key <KEY>", "the provider's key itself (shown in the process list and shell history: prefer the file or stdin)")
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
      ["models", "--models"],
    ] as const) {
      if (input[field] === undefined) throw new UsageError(`channels add needs ${option}`);
    }
    input.apiKey = await readApiKey(values);
    if (input.apiKey === undefined) throw new UsageError("channels add needs the provider's key: --api-key-file, --api-key-stdin, --api-key-env or --api-key");
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
    const input = { ...inputOf(values), apiKey: await readApiKey(values) };
    await withDb(async (db, config) => {
      const { updateChannel } = await import("../../src/generation/channels/store.ts");
      print(await updateChannel(db, await box(config), id!, input), values.json);
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
          const { listChannels, setChannelStatus } = await import("../../src/generation/channels/store.ts");
          const { modelsServedOnlyBy } = await import("../../src/generation/channels/select.ts");
          const channel = await setChannelStatus(db, id!, enabled);
          print(channel, values.json);
          // Obeyed even for the last channel of a model (ADR 0012), but said.
          const unserved = enabled ? [] : modelsServedOnlyBy(channel, await listChannels(db));
          if (unserved.length > 0)
            process.stderr.write(`warning: no enabled channel serves model ${unserved.join(", ")} now: its submissions are refused until one is enabled\n`);
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
        const { configuredKeys, getChannel, listChannels, setChannelStatus } = await import("../../src/generation/channels/store.ts");
        const { probeAdapter } = await import("../../src/generation/channels/probe.ts");
        const { createHttpUpstream } = await import("../../src/generation/upstream/http.ts");
        const { redactingUpstream } = await import("../../src/generation/upstream/redact.ts");
        const channel = await getChannel(db, id!);
        const keys = await box(config);
        let result: Awaited<ReturnType<typeof probeAdapter>>;
        if (channel.implicit && !config.upstreamUrl)
          result = { ok: true, latencyMs: 0, error: null }; // the simulator always answers
        else if (!channel.implicit && (!keys || !channel.sealedKey))
          result = { ok: false, latencyMs: 0, error: "CHANNEL_KEY_SECRET is not set: the key cannot be read" };
        else {
          const apiKey = channel.implicit ? config.upstreamKey : keys!.open(channel.sealedKey!);
          const adapter = createHttpUpstream({ baseUrl: channel.baseUrl, apiKey, timeoutMs: config.upstreamTimeoutMs });
          // What the provider says is printed: every configured key is taken out of it, as in the server.
          result = await probeAdapter(redactingUpstream(adapter, async () => configuredKeys(await listChannels(db), keys, config.upstreamKey)));
        }
        if (result.ok && channel.status === "AUTO_DISABLED") await setChannelStatus(db, channel.id, true);
        if (values.json) console.log(JSON.stringify({ id: channel.id, ok: result.ok, latency_ms: result.latencyMs, error: result.error }));
        else console.log(result.ok ? `${channel.id}: ok in ${result.latencyMs} ms` : `${channel.id}: failed: ${result.error}`);
        return result.ok ? 0 : 1;
      });
    },
  );
}
