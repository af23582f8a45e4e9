/**
 * The subgraphs the router composes, in one list: name, SDL file and default routing URL.
 * Issue by issue a subgraph is added here and nowhere else.
 */
export interface SubgraphDefinition {
  /** Subgraph name in the supergraph (`join__Graph`). */
  name: string;
  /** The SDL file, from the repository root: beside its subgraph (`subgraphs/<name>/schema.graphql`). */
  schemaFile: string;
  /** Routing URL written into the checked-in supergraph; overridden at run time by config. */
  defaultUrl: string;
}

export const SUBGRAPHS: readonly SubgraphDefinition[] = [
  { name: "generation", schemaFile: "subgraphs/generation/schema.graphql", defaultUrl: "http://127.0.0.1:4001/graphql" },
  { name: "cloud", schemaFile: "subgraphs/cloud/schema.graphql", defaultUrl: "http://127.0.0.1:4002/graphql" },
];
