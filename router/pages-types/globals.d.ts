// Globals of the classic scripts the devtools pages load before their own (router/devtools/):
// Swagger UI's bundle for docs.js, Yoga's GraphiQL and Monaco's worker hook for graphiql-start.js.
interface Window {
  SwaggerUIBundle: ((options: Record<string, unknown>) => unknown) & { presets: { apis: unknown } };
  YogaGraphiQL: { renderYogaGraphiQL(root: HTMLElement | null, options: unknown): void };
  MonacoEnvironment?: { globalAPI: boolean; getWorkerUrl(moduleId: string, label: string): string };
}
