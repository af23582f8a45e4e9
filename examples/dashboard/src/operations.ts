/**
 * The operations of the dashboard. `graphql()` is generated (src/gql/, `npm run codegen`): each
 * call returns a TypedDocumentNode, so urql knows the variables and the shape of the answer.
 */
import { graphql } from "./gql/index.js";

/** The README's dashboard: both subgraphs in one request (generation: balance and tasks; cloud: orders and a customer's balance). */
export const DashboardQuery = graphql(`
  query Dashboard($customerId: String!) {
    viewer {
      balance { amount }
      spent { amount }
      tasks(first: 20) { totalCount nodes { id status result price { amount } model { name } } }
      orders(first: 20) { nodes { id status amount { amount } product { name vendor { name } } resource { expiresAt } } }
      customerBalance(customerId: $customerId) { available { amount } creditLine { amount } }
    }
  }
`);

/** Submits a video task (its price is debited at once; the simulator settles it in a few seconds). */
export const SubmitVideoMutation = graphql(`
  mutation SubmitVideo($input: SubmitVideoGenerationInput!) {
    submitVideoGeneration(input: $input) { task { id status price { amount } } }
  }
`);

/** A task's status, live: its current state first, then every change; completes after SUCCEEDED or FAILED. */
export const TaskStatusSubscription = graphql(`
  subscription TaskStatus($taskId: ID!) {
    taskStatusChanged(taskId: $taskId) { id status statusName result error updatedAt }
  }
`);
