// Prints runner protocol v7 frames encoded by the official codec
// (@rivetkit/engine-runner-protocol, pinned in package.json) as JSON: [{name, dir, hex, json}],
// dir being "ToServer", "ToClient" or "ToServerlessServer" (version-prefixed). sdk/protocol/runner's TestNpmVectors decodes each hex with
// the Go codec and checks it re-encodes byte for byte. Run `npm ci --prefix tests/npm` first.
import * as p from "@rivetkit/engine-runner-protocol";

const ab = (...bytes) => new Uint8Array(bytes).buffer;
const str = (s) => new TextEncoder().encode(s).buffer;
const gw = ab(1, 2, 3, 4);
const req = ab(0x0a, 0x0b, 0x0c, 0x0d);
const mid = (i) => ({ gatewayId: gw, requestId: req, messageIndex: i });
const cp = { actorId: "actor-é", generation: 4000000000, index: 1099511627776n };

const toServer = {
  Init: { tag: "ToServerInit", val: { name: "echo", version: 3, totalSlots: 100000, prepopulateActorNames: new Map([["b", { metadata: '{"x":1}' }], ["a", { metadata: "{}" }]]), metadata: '{"probe":true}' } },
  InitBare: { tag: "ToServerInit", val: { name: "", version: 0, totalSlots: 0, prepopulateActorNames: null, metadata: null } },
  InitEmptyNames: { tag: "ToServerInit", val: { name: "n", version: 1, totalSlots: 1, prepopulateActorNames: new Map(), metadata: "" } },
  EventsEmpty: { tag: "ToServerEvents", val: [] },
  Events: {
    tag: "ToServerEvents",
    val: [
      { checkpoint: cp, inner: { tag: "EventActorIntent", val: { intent: { tag: "ActorIntentSleep", val: null } } } },
      { checkpoint: cp, inner: { tag: "EventActorIntent", val: { intent: { tag: "ActorIntentStop", val: null } } } },
      { checkpoint: cp, inner: { tag: "EventActorStateUpdate", val: { state: { tag: "ActorStateRunning", val: null } } } },
      { checkpoint: cp, inner: { tag: "EventActorStateUpdate", val: { state: { tag: "ActorStateStopped", val: { code: p.StopCode.Error, message: "boom" } } } } },
      { checkpoint: cp, inner: { tag: "EventActorStateUpdate", val: { state: { tag: "ActorStateStopped", val: { code: p.StopCode.Ok, message: null } } } } },
      { checkpoint: cp, inner: { tag: "EventActorSetAlarm", val: { alarmTs: -5n } } },
      { checkpoint: cp, inner: { tag: "EventActorSetAlarm", val: { alarmTs: null } } },
    ],
  },
  AckCommands: { tag: "ToServerAckCommands", val: { lastCommandCheckpoints: [cp, { actorId: "b", generation: 0, index: -1n }] } },
  Stopping: { tag: "ToServerStopping", val: null },
  Pong: { tag: "ToServerPong", val: { ts: 1700000000000n } },
  KvGet: { tag: "ToServerKvRequest", val: { actorId: "a1", requestId: 300, data: { tag: "KvGetRequest", val: { keys: [ab(), ab(0, 1), str("k".repeat(200))] } } } },
  KvListAll: { tag: "ToServerKvRequest", val: { actorId: "a1", requestId: 1, data: { tag: "KvListRequest", val: { query: { tag: "KvListAllQuery", val: null }, reverse: null, limit: null } } } },
  KvListRange: { tag: "ToServerKvRequest", val: { actorId: "a1", requestId: 2, data: { tag: "KvListRequest", val: { query: { tag: "KvListRangeQuery", val: { start: ab(1), end: ab(), exclusive: true } }, reverse: true, limit: 18446744073709551615n } } } },
  KvListPrefix: { tag: "ToServerKvRequest", val: { actorId: "a1", requestId: 3, data: { tag: "KvListRequest", val: { query: { tag: "KvListPrefixQuery", val: { key: ab(5, 1) } }, reverse: false, limit: 10n } } } },
  KvPut: { tag: "ToServerKvRequest", val: { actorId: "a1", requestId: 4, data: { tag: "KvPutRequest", val: { keys: [ab(1), ab(2)], values: [ab(), ab(3, 4)] } } } },
  KvDelete: { tag: "ToServerKvRequest", val: { actorId: "a1", requestId: 5, data: { tag: "KvDeleteRequest", val: { keys: [ab(9)] } } } },
  KvDeleteRange: { tag: "ToServerKvRequest", val: { actorId: "a1", requestId: 6, data: { tag: "KvDeleteRangeRequest", val: { start: ab(0), end: ab(255) } } } },
  KvDrop: { tag: "ToServerKvRequest", val: { actorId: "a1", requestId: 4294967295, data: { tag: "KvDropRequest", val: null } } },
  ResponseStart: { tag: "ToServerTunnelMessage", val: { messageId: mid(0), messageKind: { tag: "ToServerResponseStart", val: { status: 503, headers: new Map([["x-rivet-error", "runner.actor_not_found"], ["a", ""]]), body: null, stream: true } } } },
  ResponseStartBody: { tag: "ToServerTunnelMessage", val: { messageId: mid(1), messageKind: { tag: "ToServerResponseStart", val: { status: 200, headers: new Map(), body: str("ok"), stream: false } } } },
  ResponseChunk: { tag: "ToServerTunnelMessage", val: { messageId: mid(2), messageKind: { tag: "ToServerResponseChunk", val: { body: str("chunk"), finish: true } } } },
  ResponseAbort: { tag: "ToServerTunnelMessage", val: { messageId: mid(3), messageKind: { tag: "ToServerResponseAbort", val: null } } },
  WebSocketOpen: { tag: "ToServerTunnelMessage", val: { messageId: mid(0), messageKind: { tag: "ToServerWebSocketOpen", val: { canHibernate: true } } } },
  WebSocketMessage: { tag: "ToServerTunnelMessage", val: { messageId: mid(1), messageKind: { tag: "ToServerWebSocketMessage", val: { data: ab(0, 1, 2), binary: true } } } },
  WebSocketMessageAck: { tag: "ToServerTunnelMessage", val: { messageId: mid(65535), messageKind: { tag: "ToServerWebSocketMessageAck", val: { index: 513 } } } },
  WebSocketClose: { tag: "ToServerTunnelMessage", val: { messageId: mid(2), messageKind: { tag: "ToServerWebSocketClose", val: { code: 1011, reason: "Actor not found", hibernate: true } } } },
  WebSocketCloseBare: { tag: "ToServerTunnelMessage", val: { messageId: mid(3), messageKind: { tag: "ToServerWebSocketClose", val: { code: null, reason: null, hibernate: false } } } },
};

const toClient = {
  Init: { tag: "ToClientInit", val: { runnerId: "x".repeat(300), metadata: { runnerLostThreshold: 15000n, actorStopThreshold: 1800000n, serverlessDrainGracePeriod: 10000n } } },
  InitNoGrace: { tag: "ToClientInit", val: { runnerId: "r1", metadata: { runnerLostThreshold: 0n, actorStopThreshold: -1n, serverlessDrainGracePeriod: null } } },
  Commands: {
    tag: "ToClientCommands",
    val: [
      { checkpoint: cp, inner: { tag: "CommandStartActor", val: { config: { name: "counter", key: null, createTs: 5n, input: null }, hibernatingRequests: [{ gatewayId: gw, requestId: req }, { gatewayId: ab(9, 9, 9, 9), requestId: ab(0, 0, 0, 0) }] } } },
      { checkpoint: cp, inner: { tag: "CommandStartActor", val: { config: { name: "c", key: "", createTs: -1n, input: ab() }, hibernatingRequests: [] } } },
      { checkpoint: cp, inner: { tag: "CommandStopActor", val: null } },
    ],
  },
  AckEventsEmpty: { tag: "ToClientAckEvents", val: { lastEventCheckpoints: [] } },
  AckEvents: { tag: "ToClientAckEvents", val: { lastEventCheckpoints: [cp] } },
  KvError: { tag: "ToClientKvResponse", val: { requestId: 7, data: { tag: "KvErrorResponse", val: { message: "actor does not exist" } } } },
  KvGet: { tag: "ToClientKvResponse", val: { requestId: 8, data: { tag: "KvGetResponse", val: { keys: [ab(1), ab(2)], values: [ab(3), ab()], metadata: [{ version: str("2.3.19"), updateTs: 1700000000000n }, { version: ab(), updateTs: -1n }] } } } },
  KvList: { tag: "ToClientKvResponse", val: { requestId: 9, data: { tag: "KvListResponse", val: { keys: [ab(1)], values: [ab(2)], metadata: [{ version: str("v"), updateTs: 1n }] } } } },
  KvListEmpty: { tag: "ToClientKvResponse", val: { requestId: 10, data: { tag: "KvListResponse", val: { keys: [], values: [], metadata: [] } } } },
  KvPut: { tag: "ToClientKvResponse", val: { requestId: 11, data: { tag: "KvPutResponse", val: null } } },
  KvDelete: { tag: "ToClientKvResponse", val: { requestId: 12, data: { tag: "KvDeleteResponse", val: null } } },
  KvDrop: { tag: "ToClientKvResponse", val: { requestId: 13, data: { tag: "KvDropResponse", val: null } } },
  RequestStart: { tag: "ToClientTunnelMessage", val: { messageId: mid(0), messageKind: { tag: "ToClientRequestStart", val: { actorId: "a1", method: "POST", path: "/action/inc?x=1", headers: new Map([["content-type", "application/octet-stream"], ["x-rivet-encoding", "bare"]]), body: ab(0xde, 0xad), stream: true } } } },
  RequestStartNoBody: { tag: "ToClientTunnelMessage", val: { messageId: mid(0), messageKind: { tag: "ToClientRequestStart", val: { actorId: "a1", method: "GET", path: "/", headers: new Map(), body: null, stream: false } } } },
  RequestChunk: { tag: "ToClientTunnelMessage", val: { messageId: mid(1), messageKind: { tag: "ToClientRequestChunk", val: { body: ab(), finish: true } } } },
  RequestAbort: { tag: "ToClientTunnelMessage", val: { messageId: mid(2), messageKind: { tag: "ToClientRequestAbort", val: null } } },
  WebSocketOpen: { tag: "ToClientTunnelMessage", val: { messageId: mid(0), messageKind: { tag: "ToClientWebSocketOpen", val: { actorId: "a1", path: "/connect", headers: new Map([["sec-websocket-protocol", "rivet"]]) } } } },
  WebSocketMessage: { tag: "ToClientTunnelMessage", val: { messageId: mid(1), messageKind: { tag: "ToClientWebSocketMessage", val: { data: str("hi-text"), binary: false } } } },
  WebSocketClose: { tag: "ToClientTunnelMessage", val: { messageId: mid(2), messageKind: { tag: "ToClientWebSocketClose", val: { code: 1000, reason: "bye" } } } },
  WebSocketCloseBare: { tag: "ToClientTunnelMessage", val: { messageId: mid(3), messageKind: { tag: "ToClientWebSocketClose", val: { code: null, reason: null } } } },
  Ping: { tag: "ToClientPing", val: { ts: 1700000000000n } },
};

// JSON view of a message: bigints as decimal strings, byte buffers as hex, maps as objects.
const replacer = (_k, v) => {
  if (typeof v === "bigint") return v.toString();
  if (v instanceof ArrayBuffer) return Buffer.from(v).toString("hex");
  if (v instanceof Map) return Object.fromEntries(v);
  return v;
};

const hex = (u) => Buffer.from(u).toString("hex");
const out = [];
for (const [name, m] of Object.entries(toServer)) {
  const b = p.encodeToServer(m);
  p.decodeToServer(b); // the official decoder accepts its own output
  out.push({ name: `ToServer/${name}`, dir: "ToServer", hex: hex(b), json: JSON.parse(JSON.stringify(m, replacer)) });
}
for (const [name, m] of Object.entries(toClient)) {
  const b = p.encodeToClient(m);
  p.decodeToClient(b);
  out.push({ name: `ToClient/${name}`, dir: "ToClient", hex: hex(b), json: JSON.parse(JSON.stringify(m, replacer)) });
}
// The serverless SSE init payload: u16 LE protocol version, then ToServerlessServer (as
// Runner.getServerlessInitPacket frames it before base64).
{
  const m = { tag: "ToServerlessServerInit", val: { runnerId: "r1", runnerProtocolVersion: 7 } };
  const body = new Uint8Array(p.encodeToServerlessServer(m));
  const b = new Uint8Array(2 + body.length);
  new DataView(b.buffer).setUint16(0, 7, true);
  b.set(body, 2);
  out.push({ name: "ToServerlessServer/Init", dir: "ToServerlessServer", hex: hex(b), json: m });
}
console.log(JSON.stringify(out, null, 1));
