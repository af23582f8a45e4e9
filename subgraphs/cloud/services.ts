/** The cloud domain services a cloud subgraph runs with. */
import type { OrderService } from "../../src/cloud/orders/index.ts";
import type { OriginHostCheck } from "../../src/cloud/domains.ts";
import type { PubSub } from "../../src/events/pubsub.ts";

export interface CloudServices {
  orders: OrderService;
  /** Milliseconds per simulated step of domains and purges. */
  stepMs: number;
  /** Where the dispatcher publishes committed outbox events (subscriptions listen here). */
  pubsub: PubSub;
  /** The URL guard's host check (DNS_SERVERS): a CDN origin given as a hostname must resolve to public addresses only. */
  checkOriginHost: OriginHostCheck;
}
