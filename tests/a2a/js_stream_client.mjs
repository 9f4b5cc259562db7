// A client nobody here wrote: @a2a-js/sdk (the A2A project's JavaScript SDK) sends a streaming
// task to a Callboard agent through the hub and prints every event it sees, one JSON line
// each: {"kind": "task"|"statusUpdate"|"artifactUpdate"|"message", "state": ..., "text": ...}.
// Usage: node js_stream_client.mjs CARD_URL TOKEN BINDING TEXT MESSAGE_ID
import { ClientFactory, JsonRpcTransportFactory, RestTransportFactory } from "@a2a-js/sdk/client";
import { Role, TaskState } from "@a2a-js/sdk";

const [cardUrl, token, binding, text, messageId] = process.argv.slice(2);

// The SDK takes a fetch to call with; ours adds the Callboard token to every request.
const withToken = (url, init = {}) => {
  const headers = new Headers(init.headers || {});
  headers.set("Authorization", `Bearer ${token}`);
  return fetch(url, { ...init, headers });
};

const factory = new ClientFactory({
  transports: [new JsonRpcTransportFactory({ fetchImpl: withToken }), new RestTransportFactory({ fetchImpl: withToken })],
  preferredTransports: [binding],
});
const client = await factory.createFromUrl(cardUrl, "");

const partsText = (parts) =>
  (parts || []).filter((p) => p.content && p.content.$case === "text").map((p) => p.content.value).join("\n");

const request = {
  message: { messageId, role: Role.ROLE_USER, parts: [{ content: { $case: "text", value: text } }] },
};
for await (const event of client.sendMessageStream(request)) {
  const payload = event.payload;
  if (!payload) continue;
  const line = { kind: payload.$case };
  if (payload.$case === "task") {
    line.task_id = payload.value.id;
    line.state = TaskState[payload.value.status?.state];
    line.text = (payload.value.artifacts || []).map((a) => partsText(a.parts)).join("\n");
  } else if (payload.$case === "statusUpdate") {
    line.task_id = payload.value.taskId;
    line.state = TaskState[payload.value.status?.state];
    line.text = partsText(payload.value.status?.message?.parts);
  } else if (payload.$case === "artifactUpdate") {
    line.task_id = payload.value.taskId;
    line.text = partsText(payload.value.artifact?.parts);
  } else if (payload.$case === "message") {
    line.text = partsText(payload.value.parts);
  }
  console.log(JSON.stringify(line));
}
