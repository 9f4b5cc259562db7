// A client nobody here wrote, speaking A2A 0.3: @a2a-js/sdk 0.3 (the version most A2A tools
// still ship, e.g. a2a-simulator). A 1.0 card names its endpoints only in supportedInterfaces,
// which 0.3 does not read ("no compatible transport"), so this client is pointed at the endpoint
// the 1.0 card names for BINDING, as a person wiring an old tool to a new agent would; it sends
// one message and prints one JSON line: {"result": ...} or {"error": "<what the client says>"}.
// Usage: node js_old_client.mjs CARD_URL TOKEN BINDING TEXT MESSAGE_ID
import { JsonRpcTransport, RestTransport } from "@a2a-js/sdk/client";

const [cardUrl, token, binding, text, messageId] = process.argv.slice(2);

const withToken = (url, init = {}) => {
  const headers = new Headers(init.headers || {});
  headers.set("Authorization", `Bearer ${token}`);
  return fetch(url, { ...init, headers });
};

try {
  const card = await (await fetch(cardUrl)).json();
  const endpoint = (card.supportedInterfaces || []).find((i) => i.protocolBinding === binding).url;
  const Transport = binding === "JSONRPC" ? JsonRpcTransport : RestTransport;
  const transport = new Transport({ endpoint, fetchImpl: withToken });
  const result = await transport.sendMessage({
    message: { kind: "message", messageId, role: "user", parts: [{ kind: "text", text }] },
  });
  console.log(JSON.stringify({ result }));
} catch (error) {
  console.log(JSON.stringify({ error: String((error && error.message) || error) }));
}
