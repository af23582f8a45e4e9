/**
 * Placeholder media of the embedded simulator (docs/architecture.md §5), so simulated results open in a
 * browser: `/media/sim/<task>-<n>.svg` (an image with the AI-generated mark) and
 * `/media/sim/<task>.mp4` (a two-second clip); and provider results kept on disk, behind signed
 * expiring URLs (`/media/p/...`, {@link serveProviderMedia}).
 */
import fs from "node:fs";
import type { IncomingMessage, ServerResponse } from "node:http";
import { pipeline } from "node:stream/promises";
import { MEDIA_NAME, MEDIA_TYPES, verifyMediaSignature, type MediaSource } from "../src/generation/media/signed-url.ts";

const video = fs.readFileSync(new URL("./pages/assets/placeholder.mp4", import.meta.url));

function escapeXml(text: string): string {
  return text.replace(/[<>&"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/**
 * Serves one placeholder file.
 * @param name the file name after `/media/sim/`
 * @returns false when the name is not a placeholder (the caller answers 404)
 */
export function serveSimulatorMedia(name: string, res: ServerResponse): boolean {
  const image = /^([A-Za-z0-9_]{1,60})-(\d{1,2})\.svg$/.exec(name);
  if (image) {
    const [, task, n] = image;
    const hue = (parseInt(task!.slice(-6), 36) + Number(n) * 47) % 360;
    const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="512" height="512" viewBox="0 0 512 512">
<defs><linearGradient id="g" x1="0" y1="0" x2="1" y2="1"><stop offset="0" stop-color="hsl(${hue},60%,45%)"/><stop offset="1" stop-color="hsl(${(hue + 60) % 360},60%,30%)"/></linearGradient></defs>
<rect width="512" height="512" fill="url(#g)"/>
<text x="256" y="240" font-family="sans-serif" font-size="28" fill="#fff" text-anchor="middle">Simulated image ${escapeXml(n!)}</text>
<text x="256" y="280" font-family="monospace" font-size="14" fill="#fff" text-anchor="middle">${escapeXml(task!)}</text>
<rect x="312" y="470" width="190" height="32" rx="6" fill="rgba(0,0,0,.55)"/>
<text x="407" y="492" font-family="sans-serif" font-size="16" fill="#fff" text-anchor="middle">AI-generated · AI生成</text>
</svg>`;
    res.writeHead(200, { "content-type": "image/svg+xml", "cache-control": "public, max-age=86400" });
    res.end(svg);
    return true;
  }
  if (/^[A-Za-z0-9_]{1,60}\.mp4$/.test(name)) {
    res.writeHead(200, { "content-type": "video/mp4", "content-length": video.length, "cache-control": "public, max-age=86400" });
    res.end(video);
    return true;
  }
  return false;
}

/**
 * Serves a provider result kept under `DATA_DIR/media` or in the bucket (src/generation/media/) at
 * `/media/p/<name>?exp=&sig=` (README "Channels", "Results"): 403 `Media link expired` or
 * `Media link invalid` unless signed and unexpired, 404 when no longer kept; one byte range
 * (`Range: bytes=a-b`) is honoured so players can seek. Nothing of the provider is in the answer.
 * @param name the file name after `/media/p/`
 * @param search the query string (`exp`, `sig`)
 * @param source where kept results are read from (disk or bucket)
 * @param key the signing key (`mediaSigningKey` of SUBGRAPH_SECRET)
 */
export async function serveProviderMedia(
  req: IncomingMessage,
  res: ServerResponse,
  name: string,
  search: URLSearchParams,
  source: MediaSource,
  key: Buffer,
): Promise<void> {
  const plain = (status: number, message: string) => {
    res.writeHead(status, { "content-type": "application/json; charset=utf-8", "cache-control": "no-store" });
    res.end(JSON.stringify({ code: status, message }));
  };
  if (!MEDIA_NAME.test(name)) return plain(404, "Not found");
  const verdict = verifyMediaSignature(key, name, search.get("exp"), search.get("sig"));
  if (verdict !== "ok") return plain(403, verdict === "expired" ? "Media link expired" : "Media link invalid");
  const info = await source.stat(name).catch(() => null);
  if (!info) return plain(404, "Not found");
  const type = MEDIA_TYPES[name.slice(name.lastIndexOf(".") + 1)]!;
  const headers: Record<string, string | number> = { "content-type": type, "accept-ranges": "bytes", "cache-control": "private, max-age=3600" };
  const range = /^bytes=(\d*)-(\d*)$/.exec(String(req.headers.range ?? ""));
  let start = 0;
  let end = info.size - 1;
  if (range && (range[1] || range[2])) {
    start = range[1] ? Number(range[1]) : Math.max(0, info.size - Number(range[2]));
    end = range[1] && range[2] ? Math.min(Number(range[2]), info.size - 1) : info.size - 1;
    if (start > end || start >= info.size) {
      res.writeHead(416, { "content-range": `bytes */${info.size}` });
      return void res.end();
    }
    res.writeHead(206, { ...headers, "content-range": `bytes ${start}-${end}/${info.size}`, "content-length": end - start + 1 });
  } else res.writeHead(200, { ...headers, "content-length": info.size });
  if (req.method === "HEAD") return void res.end();
  if (info.size === 0) return void res.end();
  await pipeline(await source.open(name, start, end), res).catch(() => res.destroy());
}
