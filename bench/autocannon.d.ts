/**
 * The part of autocannon 8's programmatic API the bench uses (the package ships no types and
 * @types/autocannon is not installed). Shapes from autocannon's README "API" and "Results".
 */
declare module "autocannon" {
  namespace autocannon {
    interface Options {
      url: string;
      method?: string;
      headers?: Record<string, string>;
      body?: string;
      /** Requests each connection loops over; `setupRequest` may rewrite one (body, headers) before it is sent. */
      requests?: { body?: string; setupRequest?: (request: Request) => Record<string, unknown> }[];
      connections?: number;
      /** Seconds. */
      duration?: number;
      /** Seconds before a request counts as a timeout. */
      timeout?: number;
      /** Counted in `mismatches` when it returns a falsy value. */
      verifyBody?: (body: string) => boolean;
    }
    /** One request as `setupRequest` receives it. */
    type Request = { body?: string; headers?: Record<string, string> } & Record<string, unknown>;
    /** hdr-histogram-percentiles-obj: milliseconds for latency, counts per second for requests. */
    interface Histogram {
      min: number;
      max: number;
      average: number;
      stddev: number;
      total: number;
      p50: number;
      p90: number;
      p97_5: number;
      p99: number;
    }
    interface Result {
      requests: Histogram;
      latency: Histogram;
      /** Seconds. */
      duration: number;
      errors: number;
      timeouts: number;
      mismatches: number;
      non2xx: number;
      statusCodeStats: Record<string, { count: number }>;
    }
  }
  function autocannon(options: autocannon.Options): Promise<autocannon.Result>;
  export default autocannon;
}
