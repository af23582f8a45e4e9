/**
 * Shapes both REST surfaces share: money and timestamps (docs/architecture.md §3).
 */
import { z } from "./zod.ts";

/** Money on REST (docs/architecture.md §3): yuan as a JSON number with at most three decimals. */
export const moneySchema = z.number().openapi("Money", {
  description: "Yuan (CNY) as a JSON number with at most three decimals, exact: derived from integer milli-yuan (1.125 is 1125 milli-yuan).",
});

/** An ISO 8601 UTC timestamp. */
export const dateTime = z.string().datetime();

/** The answer of `GET …/openapi.json`: an OpenAPI 3.1 document. */
export const OpenApiDocumentShape = z
  .object({
    openapi: z.string().regex(/^3\.1\.\d+$/),
    info: z.object({ title: z.string(), version: z.string() }),
    paths: z.object({}).passthrough(),
  })
  .passthrough()
  .openapi({ description: "An OpenAPI 3.1 document." });
