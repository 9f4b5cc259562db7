// A client nobody here wrote, speaking A2A 0.3: @a2a-js/sdk 0.3 (the version most A2A tools
// still ship, e.g. a2a-simulator) reads an agent's card, sends it one message over the chosen
// binding and prints one JSON line: {"result": ...} or {"error": "<what the client says>"}.
// Usage: node js_old_client.mjs CARD_URL TOKEN BINDING TEXT MESSAGE_ID
import { ClientFactory, JsonRpcTransportFactory, RestTransportFactory } from "@a2a-js/sdk/client";

const [cardUrl, token, binding, text, messageId] = process.argv.slice(2);

const withToken = (url, init = {}) => {
  const headers = new Headers(init.headers || {});
  headers.set("Authorization", `Bearer ${token}`);
  return fetch(url, { ...init, headers });
};

const factory = new ClientFactory({
  transports: [new JsonRpcTransportFactory({ fetchImpl: withToken }), new RestTransportFactory({ fetchImpl: withToken })],
  preferredTransports: [binding],
});
try {
  const client = await factory.createFromUrl(cardUrl, "");
  const result = await client.sendMessage({
    message: { kind: "message", messageId, role: "user", parts: [{ kind: "text", text }] },
  });
  console.log(JSON.stringify({ result }));
} catch (error) {
  console.log(JSON.stringify({ error: String((error && error.message) || error) }));
}
