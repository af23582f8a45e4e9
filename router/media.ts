/**
 * Placeholder media of the embedded simulator (docs/architecture.md §5), so simulated results open in a
 * browser: `/media/sim/<task>-<n>.svg` (an image with the AI-generated mark) and
 * `/media/sim/<task>.mp4` (a two-second clip).
 */
import fs from "node:fs";
import type { ServerResponse } from "node:http";

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
