/** `switchyard channels …`: add, list, update, disable, enable, test (README "Channels"). */
import { readFile } from "node:fs/promises";
import type { Command } from "commander";
import type { Db } from "../../src/db/index.ts";
import type { ChannelInput, ChannelRecord } from "../../src/generation/channels/store.ts";
import { CHANNEL_TYPE_IDS, channelType } from "../../src/generation/upstream/channel-types.ts";
import { group, integerOption, list, table, UsageError, withDb, type Act } from "./shared.ts";

/** A credential a channel type takes, with its option stem (`--api-key-file` …). */
const CREDENTIALS = [
  ["apiKey", "api-key", "the provider's key"],
  ["accessKey", "access-key", "Kling's access key"],
  ["secretKey", "secret-key", "Kling's secret key"],
] as const;
type Credential = (typeof CREDENTIALS)[number][0];

/** The option values of one credential (camelCase as commander names them). */
type Sources = Record<string, string | boolean | undefined>;

/**
 * One credential from the one source given: `--<stem>-file FILE`, `--<stem>-stdin` (as `docker
 * login --password-stdin`), `--<stem>-env NAME`, or `--<stem> VALUE` (which the process list and
 * the shell history show: a warning on stderr says so). Trailing line breaks of a file or stdin
 * are dropped.
 * @returns the value, or undefined when no source was given
 * @throws UsageError for two sources, an unset variable or an empty value; Error when the file cannot be read
 */
async function readCredential(values: Sources, field: Credential, stem: string): Promise<string | undefined> {
  const names = { file: `${field}File`, stdin: `${field}Stdin`, env: `${field}Env`, plain: field };
  const given = Object.values(names).filter((k) => values[k] !== undefined);
  if (given.length > 1)
    throw new UsageError(`give the ${stem === "api-key" ? "key" : stem.replace("-", " ")} once: --${stem}-file, --${stem}-stdin, --${stem}-env or --${stem}`);
  let value: string;
  let source: string;
  if (values[names.file] !== undefined) {
    const file = String(values[names.file]);
    source = `--${stem}-file ${file}`;
    try {
      value = await readFile(file, "utf8");
    } catch (error) {
      throw new Error(`cannot read ${source}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
    }
  } else if (values[names.stdin]) {
    source = `--${stem}-stdin`;
    const chunks: Buffer[] = [];
    for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
    value = Buffer.concat(chunks).toString("utf8");
  } else if (values[names.env] !== undefined) {
    source = `--${stem}-env ${values[names.env]}`;
    const set = process.env[String(values[names.env])];
    if (set === undefined) throw new UsageError(`${source}: the variable is not set`);
    value = set;
  } else if (values[names.plain] !== undefined) {
    process.stderr.write(`warning: --${stem} is visible in the process list and the shell history; prefer --${stem}-file or --${stem}-stdin\n`);
    return String(values[names.plain]);
  } else {
    return undefined;
  }
  value = value.replace(/[\r\n]+$/, "");
  if (!value) throw new UsageError(`${source}: the ${stem === "api-key" ? "key" : stem.replace("-", " ")} is empty`);
  return value;
}

/** Every credential given, by field. @throws UsageError when more than one reads stdin */
async function readCredentials(values: Sources): Promise<Partial<Record<Credential, string>>> {
  if (CREDENTIALS.filter(([field]) => values[`${field}Stdin`]).length > 1) throw new UsageError("only one credential can be read from stdin");
  const out: Partial<Record<Credential, string>> = {};
  for (const [field, stem] of CREDENTIALS) {
    const value = await readCredential(values, field, stem);
    if (value !== undefined) out[field] = value;
  }
  return out;
}

/** Options shared by add and update, read into a {@link ChannelInput}. */
function inputOf(values: { name?: string; type?: string; baseUrl?: string; models?: string; map?: string; priority?: string; weight?: string }): ChannelInput {
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
    type: values.type,
    baseUrl: values.baseUrl,
    models,
    modelMapping,
    priority: whole(values.priority, "priority"),
    weight: whole(values.weight, "weight"),
  };
}

const fieldOptions = (command: Command) => {
  command.option("--name <N>", "the operator's name for it").option("--base-url <URL>", "the provider's base URL (http or https)");
  for (const [, stem, what] of CREDENTIALS) {
    command
      .option(`--${stem}-file <FILE>`, `read ${what} from FILE (stored encrypted with CHANNEL_KEY_SECRET)`)
      .option(`--${stem}-stdin`, `read ${what} from stdin`)
      .option(`--${stem}-env <NAME>`, `read ${what} from the environment variable NAME`)
      .option(`--${stem} <VALUE>`, `${what} itself (shown in the process list and shell history: prefer the file or stdin)`);
  }
  return command
    .option("--models <ID,...>", "our model ids it serves, comma-separated")
    .option("--map <ID=NAME,...>", "model ids sent upstream under another name")
    .option("--priority <N>", "higher is tried first (default 0)")
    .option("--weight <N>", "1-1000: share inside its priority group (default 1)")
    .option("--json", "print the channel as JSON (the shape of admin GraphQL's Channel)");
};

/** Registers `channels` and its subcommands on the program. */
export function registerChannelCommands(program: Command, act: Act): void {
  const channels = group(program, "channels", "upstream channels: add, list, update, disable, enable, test");
  const print = async (db: Db, channel: ChannelRecord, json?: boolean) => {
    const { channelAnswer, channelView } = await import("../../src/generation/channels/view.ts");
    console.log(
      json
        ? JSON.stringify(channelAnswer(await channelView(db, channel)))
        : `${channel.id}  ${channel.name}  ${channel.type}  ${channel.status}  priority ${channel.priority}  weight ${channel.weight}  ${channel.baseUrl}`,
    );
  };
  const box = async (config: { channelKeySecret?: string }) => (await import("../../src/generation/channels/index.ts")).keyBoxFor(config);

  act(
    fieldOptions(
      channels
        .command("add")
        .description("add a channel (enabled); needs CHANNEL_KEY_SECRET")
        .option("--type <TYPE>", `the protocol it speaks: ${CHANNEL_TYPE_IDS.join(", ")} (default switchyard; kling takes --access-key-* and --secret-key-*)`),
    ),
    async function () {
      const values = this.opts();
      const input = inputOf(values);
      const type = channelType(input.type ?? "switchyard");
      if (!type) throw new UsageError(`--type must be one of: ${CHANNEL_TYPE_IDS.join(", ")}`);
      for (const [field, option] of [
        ["name", "--name"],
        ["baseUrl", "--base-url"],
        ["models", "--models"],
      ] as const) {
        if (input[field] === undefined) throw new UsageError(`channels add needs ${option}`);
      }
      Object.assign(input, await readCredentials(values));
      for (const field of type.credentials) {
        const stem = CREDENTIALS.find(([f]) => f === field)![1];
        if (input[field] === undefined)
          throw new UsageError(
            field === "apiKey"
              ? "channels add needs the provider's key: --api-key-file, --api-key-stdin, --api-key-env or --api-key"
              : `channels add --type ${type.id} needs --${stem}-file, --${stem}-stdin, --${stem}-env or --${stem}`,
          );
      }
      await withDb(async (db, config) => {
        const { addChannel } = await import("../../src/generation/channels/store.ts");
        const { auditedChannelWrite } = await import("../../src/generation/channels/audit.ts");
        const { CLI_ACTOR } = await import("../../src/audit/log.ts");
        const sealed = await box(config);
        const channel = await auditedChannelWrite(db, CLI_ACTOR, "channels.add", null, (trx) =>
          addChannel(trx, sealed, input as Parameters<typeof addChannel>[2]),
        );
        await print(db, channel, values.json);
      });
    },
  );
  act(
    channels.command("list").description("list channels, highest priority first, with their health and figures").option("--json", "print a JSON array"),
    async function () {
      const values = this.opts<{ json?: boolean }>();
      await withDb(async (db) => {
        const { channelAnswer, channelViews } = await import("../../src/generation/channels/view.ts");
        const rows = await channelViews(db);
        if (values.json) return console.log(JSON.stringify(rows.map(channelAnswer)));
        const rate = (c: ChannelRecord) => (c.submissions ? `${((100 * c.successes) / c.submissions).toFixed(1)}%` : "-");
        console.log(
          table([
            ["ID", "NAME", "TYPE", "STATUS", "PRIORITY", "WEIGHT", "MODELS", "TRIED", "OK RATE", "OPEN", "NEXT PROBE", "BASE URL"],
            ...rows.map((c) => [
              c.id,
              c.name,
              c.type,
              c.status,
              String(c.priority),
              String(c.weight),
              c.models?.join(",") ?? "all",
              String(c.submissions),
              rate(c),
              String(c.openTasks),
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
    const input = { ...inputOf(values), ...(await readCredentials(values)) };
    await withDb(async (db, config) => {
      const { updateChannel } = await import("../../src/generation/channels/store.ts");
      const { auditedChannelWrite } = await import("../../src/generation/channels/audit.ts");
      const { CLI_ACTOR } = await import("../../src/audit/log.ts");
      const sealed = await box(config);
      await print(db, await auditedChannelWrite(db, CLI_ACTOR, "channels.update", id!, (trx) => updateChannel(trx, sealed, id!, input)), values.json);
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
          const { auditedChannelWrite } = await import("../../src/generation/channels/audit.ts");
          const { CLI_ACTOR } = await import("../../src/audit/log.ts");
          const channel = await auditedChannelWrite(db, CLI_ACTOR, `channels.${name}`, id!, (trx) => setChannelStatus(trx, id!, enabled));
          await print(db, channel, values.json);
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
        const { unpackCredentials } = await import("../../src/generation/upstream/channel-types.ts");
        const { redactingUpstream } = await import("../../src/generation/upstream/redact.ts");
        const channel = await getChannel(db, id!);
        const keys = await box(config);
        let result: Awaited<ReturnType<typeof probeAdapter>>;
        if (channel.implicit && !config.upstreamUrl)
          result = { ok: true, latencyMs: 0, error: null }; // the simulator always answers
        else if (!channel.implicit && (!keys || !channel.sealedKey))
          result = { ok: false, latencyMs: 0, error: "CHANNEL_KEY_SECRET is not set: the key cannot be read" };
        else {
          const spec = channelType(channel.type)!;
          const adapter = channel.implicit
            ? createHttpUpstream({ baseUrl: channel.baseUrl, apiKey: config.upstreamKey, timeoutMs: config.upstreamTimeoutMs })
            : spec.create({
                baseUrl: channel.baseUrl,
                credentials: unpackCredentials(spec, keys!.open(channel.sealedKey!)),
                timeoutMs: config.upstreamTimeoutMs,
                modelFor: () => "",
                // A probe makes no task, so it keeps no result.
                results: { keep: async () => "", urlOf: async () => null },
              });
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
