/**
 * A small dashboard for one API key: the README's dashboard query, then a video task watched live.
 *
 *   SWITCHYARD_URL=http://127.0.0.1:4000 SWITCHYARD_KEY=sy_... npm start
 *
 * CUSTOMER_ID picks the cloud customer whose balance is shown (default cust-42). TASK_ID watches
 * that task instead of submitting a new one (a submission is charged to the key).
 */
import { createDashboardClient } from "./client.ts";
import { DashboardQuery, SubmitVideoMutation, TaskStatusSubscription } from "./operations.ts";
import type { TaskStatus } from "./gql/graphql.js";

const url = process.env.SWITCHYARD_URL ?? "http://127.0.0.1:4000";
const key = process.env.SWITCHYARD_KEY;
if (!key) {
  console.error("Set SWITCHYARD_KEY to an API key (npm start prints a demo key on its first start).");
  process.exit(2);
}
const customerId = process.env.CUSTOMER_ID ?? "cust-42";
const client = createDashboardClient(url, key);

try {
  const dashboard = await client.urql.query(DashboardQuery, { customerId }).toPromise();
  // Field errors (a scope the key lacks, an unknown customer) come with the data that could be read.
  if (dashboard.error) console.error(`errors: ${dashboard.error.message}`);
  const viewer = dashboard.data?.viewer;
  if (!viewer) throw new Error("no viewer: is the key valid?");
  console.log(`Dashboard of ${url}`);
  console.log(`  balance ${viewer.balance?.amount ?? "-"} CNY, spent ${viewer.spent?.amount ?? "-"}`);
  console.log(`  tasks: ${viewer.tasks?.totalCount ?? 0}`);
  for (const task of viewer.tasks?.nodes ?? []) {
    console.log(`    ${task.id} ${task.status} ${task.price.amount} ${task.model.name} ${task.result ?? ""}`.trimEnd());
  }
  console.log(`  orders: ${viewer.orders?.nodes.length ?? 0}`);
  for (const order of viewer.orders?.nodes ?? []) {
    const product = order.product ? `${order.product.name} (${order.product.vendor?.name ?? "?"})` : "-";
    console.log(`    ${order.id} ${order.status} ${order.amount.amount} ${product}${order.resource ? ` expires ${order.resource.expiresAt}` : ""}`);
  }
  const balance = viewer.customerBalance;
  if (balance) console.log(`  customer ${customerId}: available ${balance.available.amount}, credit line ${balance.creditLine.amount}`);

  let taskId = process.env.TASK_ID;
  if (!taskId) {
    const submitted = await client.urql
      .mutation(SubmitVideoMutation, { input: { prompt: "a red fox running through snow", modelId: 69, seconds: 6, resolution: "480P" } })
      .toPromise();
    const task = submitted.data?.submitVideoGeneration?.task;
    if (!task) throw new Error(`submission refused: ${submitted.error?.message ?? "no task"}`);
    console.log(`Submitted ${task.id} (${task.price.amount} CNY)`);
    taskId = task.id;
  }

  console.log(`Watching ${taskId} live:`);
  const done: TaskStatus[] = ["SUCCEEDED", "FAILED"];
  await new Promise<void>((resolve, reject) => {
    const { unsubscribe } = client.urql.subscription(TaskStatusSubscription, { taskId }).subscribe((result) => {
      if (result.error) {
        unsubscribe();
        reject(new Error(result.error.message));
        return;
      }
      const event = result.data?.taskStatusChanged;
      if (!event) return;
      console.log(`  ${event.updatedAt} ${event.status} ${event.result ?? event.error ?? ""}`.trimEnd());
      if (done.includes(event.status)) {
        unsubscribe();
        resolve();
      }
    });
  });
} finally {
  await client.close();
}
