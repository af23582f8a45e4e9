/**
 * The GraphQL operations of the generation REST shim (router/rest/generation.ts), one per
 * documented call; data only, so router/contract/ can validate them without loading the gateway
 * (cloud's are in ./cloud-shapes.ts).
 */
const TASK_FIELDS = `
  id statusCode statusName result images error createdAt updatedAt
  price { amount } refunded { amount } charged { amount }
  model { id name kind }
`;

/** The operations of the generation shim (./generation.ts), parsed once by the gateway's document cache. */
export const OPERATIONS = {
  submitVideo: `mutation RestSubmitVideo($input: SubmitVideoGenerationInput!) { submitVideoGeneration(input: $input) { task { ${TASK_FIELDS} } } }`,
  submitImage: `mutation RestSubmitImage($input: SubmitImageGenerationInput!) { submitImageGeneration(input: $input) { task { ${TASK_FIELDS} } } }`,
  task: `query RestTask($id: ID!) { task(id: $id) { ${TASK_FIELDS} } }`,
  usage: `query RestUsage($first: Int!) { viewer { balance { amount } spent { amount } billedSeconds billedImages
    tasks(first: $first) { nodes { ${TASK_FIELDS} } } recentRequests(first: $first) { method path status at } } }`,
  // `viewer` needs any valid key; `balance` needs the `generation` scope, which every call here needs.
  auth: `query RestAuth { viewer { balance { amount } } }`,
  models: `query RestModels { models { id name kind sizes resolutions durations { resolution seconds } defaultSeconds maxCount
    references { kinds frames maxImages maxAudios maxVideos maxTotal audioNeedsVisual } available } }`,
} as const;
