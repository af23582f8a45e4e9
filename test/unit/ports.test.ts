import net from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config.ts";
import { assertPortsFree, describeListenError } from "../../bin/ports.ts";

describe("ports a start listens on", () => {
  const taken = net.createServer();
  let port = 0;
  beforeAll(async () => {
    await new Promise<void>((resolve) => taken.listen(0, "127.0.0.1", resolve));
    port = (taken.address() as net.AddressInfo).port;
  });
  afterAll(() => new Promise((resolve) => taken.close(resolve)));

  it("turns a listen that lost the port to another process into one line naming the variable and the address", async () => {
    const config = loadConfig({ PORT: "0", GENERATION_PORT: String(port), CLOUD_PORT: "0" });
    const error = await new Promise<Error>((resolve) => {
      const late = net.createServer();
      late.once("error", resolve);
      late.listen(port, "127.0.0.1");
    });
    expect(describeListenError(error, config, ["generation", "cloud", "router"])?.message).toBe(
      `GENERATION_PORT: 127.0.0.1:${port} is already in use; stop what listens there or set GENERATION_PORT to another port`,
    );
    expect(describeListenError(new Error("something else"), config, ["generation"])).toBeNull();
  });

  it("checks only the ports of the roles that run here, and never port 0", async () => {
    const config = loadConfig({ PORT: String(port), GENERATION_PORT: "0", CLOUD_PORT: "0" });
    await expect(assertPortsFree(config, ["generation", "cloud"])).resolves.toBeUndefined();
    await expect(assertPortsFree(config, ["router"])).rejects.toThrow(`PORT: 127.0.0.1:${port} is already in use`);
  });
});
