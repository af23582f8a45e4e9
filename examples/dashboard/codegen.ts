/**
 * GraphQL Code Generator (client preset): typed documents for every `graphql(...)` call under
 * src/, generated into src/gql/ from the API schema.
 *
 *   npm run codegen                     from ../../schema/api.graphql (this repository's)
 *   SWITCHYARD_SCHEMA=https://host/graphql/schema.graphql npm run codegen   from a running server
 */
import type { CodegenConfig } from "@graphql-codegen/cli";

const config: CodegenConfig = {
  schema: process.env.SWITCHYARD_SCHEMA ?? "../../schema/api.graphql",
  documents: ["src/**/*.ts", "!src/gql/**/*"],
  ignoreNoDocuments: false,
  // Node ESM needs extensions on relative imports.
  importExtension: ".js",
  generates: {
    "src/gql/": {
      preset: "client",
      presetConfig: { fragmentMasking: false },
      config: {
        // DateTime is RFC 3339 text on the wire (CHANGELOG.md); JSONObject a JSON object.
        scalars: { DateTime: "string", JSONObject: "Record<string, unknown>" },
        strictScalars: true,
        enumsAsTypes: true,
        useTypeImports: true,
      },
    },
  },
};

export default config;
