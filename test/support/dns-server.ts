/**
 * A real UDP DNS server on loopback for tests (dns2). It answers A and AAAA questions from a fixed
 * table and NXDOMAIN for names it does not know; a known name without records of the asked type
 * gets an empty NOERROR answer (which resolvers report as ENODATA).
 */
import dns2 from "dns2";
import ipaddr from "ipaddr.js";

const { Packet } = dns2;
/** RFC 1035 §4.1.1 "name error" (dns2 has `Packet.RCODE` at runtime but not in its types). */
const RCODE_NXDOMAIN = 3;

/** Records of one name: IPv4 addresses for A, IPv6 addresses for AAAA. */
export interface DnsRecords {
  A?: string[];
  AAAA?: string[];
}

/** A running test DNS server. */
export interface TestDnsServer {
  /** `"127.0.0.1:PORT"`, ready for `Resolver#setServers` or `DNS_SERVERS`. */
  address: string;
  /** Stops the server. */
  close(): Promise<void>;
}

function normaliseName(name: string): string {
  return name.toLowerCase().replace(/\.$/, "");
}

/**
 * Starts a UDP DNS server on 127.0.0.1 on a free port.
 *
 * @param records - name (case-insensitive, optional trailing dot) → its A and AAAA records.
 * @returns The server's `host:port` and a `close` function.
 */
export async function startDnsServer(records: Record<string, DnsRecords>): Promise<TestDnsServer> {
  const table = new Map<string, DnsRecords>();
  for (const [name, entry] of Object.entries(records)) table.set(normaliseName(name), entry);

  const server = dns2.createServer({
    udp: true,
    handle(request, send) {
      const response = Packet.createResponseFromRequest(request);
      const question = request.questions[0];
      const entry = question ? table.get(normaliseName(question.name)) : undefined;
      if (!question || !entry) {
        response.header.rcode = RCODE_NXDOMAIN;
      } else if (question.type === Packet.TYPE.A) {
        for (const address of entry.A ?? []) {
          response.answers.push(Packet.createResourceFromQuestion(question, { ttl: 1, address }));
        }
      } else if (question.type === Packet.TYPE.AAAA) {
        for (const address of entry.AAAA ?? []) {
          // dns2's encoder only understands plain hex groups: expand "::" and embedded IPv4.
          const expanded = ipaddr.IPv6.parse(address).toNormalizedString();
          response.answers.push(Packet.createResourceFromQuestion(question, { ttl: 1, address: expanded }));
        }
      }
      void send(response);
    },
  });

  // dns2's listen() skips a falsy port, so pass port 0 in the object form that dgram.bind takes.
  const addresses = await server.listen({ udp: { port: 0, address: "127.0.0.1" } });
  const udp = addresses.udp;
  if (!udp) throw new Error("dns2 server did not report a UDP address");
  return {
    address: `127.0.0.1:${udp.port}`,
    close: () => server.close(),
  };
}
