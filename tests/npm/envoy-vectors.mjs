// Prints envoy protocol v8 frames encoded by the official codec
// (@rivetkit/engine-envoy-protocol, pinned in package.json) as JSON: [{name, dir, hex, json}],
// dir being the top-level union ("ToRivet", "ToEnvoy", "ToEnvoyConn", "ToGateway", "ToOutbound"
// or "ActorCommandKeyData") and json the message in the codec's own shape (bigints as decimal
// strings, byte buffers as hex, maps as objects, typed arrays as arrays).
// sdk/protocol/envoy's TestNpmVectors decodes each hex with the Go codec, checks the decoded
// value against json and that it re-encodes byte for byte. Run `npm ci --prefix tests/npm` first.
import * as p from "@rivetkit/engine-envoy-protocol";

const ab = (...bytes) => new Uint8Array(bytes).buffer;
const str = (s) => new TextEncoder().encode(s).buffer;
const gw = ab(1, 2, 3, 4);
const req = ab(0x0a, 0x0b, 0x0c, 0x0d);
const mid = (i) => ({ gatewayId: gw, requestId: req, messageIndex: i });
const cp = { actorId: "actor-é", generation: 4000000000, index: 1099511627776n };
const md = { version: str("2.3.19"), updateTs: 1700000000000n };
// REAL values travel as data[8] holding the big-endian bits of the f64 (as the Rivet engine
// writes them); 1.5 is 3ff8000000000000.
const f64be = (x) => {
  const b = new ArrayBuffer(8);
  new DataView(b).setFloat64(0, x, false);
  return b;
};
const values = [
  { tag: "SqliteValueNull", val: null },
  { tag: "SqliteValueInteger", val: { value: -9007199254740993n } },
  { tag: "SqliteValueFloat", val: { value: f64be(1.5) } },
  { tag: "SqliteValueFloat", val: { value: ab(0x7f, 0xf8, 0, 0, 0, 0, 0, 1) } }, // a NaN payload, kept as is
  { tag: "SqliteValueText", val: { value: "héllo" } },
  { tag: "SqliteValueBlob", val: { value: ab(0, 255) } },
];
const execResult = { columns: ["id", "name"], rows: [[values[1], values[4]], [values[0], values[5]], []], changes: 3n, lastInsertRowId: 42n };
const sqlErr = { tag: "SqliteErrorResponse", val: { group: "sqlite", code: "fence_mismatch", message: "expected generation 3, found 4" } };

const toRivet = {
  Metadata: { tag: "ToRivetMetadata", val: { prepopulateActorNames: new Map([["b", { metadata: '{"x":1}' }], ["a", { metadata: "{}" }]]), metadata: '{"probe":true}' } },
  MetadataBare: { tag: "ToRivetMetadata", val: { prepopulateActorNames: null, metadata: null } },
  MetadataEmptyNames: { tag: "ToRivetMetadata", val: { prepopulateActorNames: new Map(), metadata: "" } },
  EventsEmpty: { tag: "ToRivetEvents", val: [] },
  Events: {
    tag: "ToRivetEvents",
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
  AckCommands: { tag: "ToRivetAckCommands", val: { lastCommandCheckpoints: [cp, { actorId: "b", generation: 0, index: -1n }] } },
  Stopping: { tag: "ToRivetStopping", val: null },
  Pong: { tag: "ToRivetPong", val: { ts: 1700000000000n } },
  KvGet: { tag: "ToRivetKvRequest", val: { actorId: "a1", requestId: 300, data: { tag: "KvGetRequest", val: { keys: [ab(), ab(0, 1), str("k".repeat(200))] } } } },
  KvListAll: { tag: "ToRivetKvRequest", val: { actorId: "a1", requestId: 1, data: { tag: "KvListRequest", val: { query: { tag: "KvListAllQuery", val: null }, reverse: null, limit: null } } } },
  KvListRange: { tag: "ToRivetKvRequest", val: { actorId: "a1", requestId: 2, data: { tag: "KvListRequest", val: { query: { tag: "KvListRangeQuery", val: { start: ab(1), end: ab(), exclusive: true } }, reverse: true, limit: 18446744073709551615n } } } },
  KvListPrefix: { tag: "ToRivetKvRequest", val: { actorId: "a1", requestId: 3, data: { tag: "KvListRequest", val: { query: { tag: "KvListPrefixQuery", val: { key: ab(5, 1) } }, reverse: false, limit: 10n } } } },
  KvPut: { tag: "ToRivetKvRequest", val: { actorId: "a1", requestId: 4, data: { tag: "KvPutRequest", val: { keys: [ab(1), ab(2)], values: [ab(), ab(3, 4)] } } } },
  KvDelete: { tag: "ToRivetKvRequest", val: { actorId: "a1", requestId: 5, data: { tag: "KvDeleteRequest", val: { keys: [ab(9)] } } } },
  KvDeleteRange: { tag: "ToRivetKvRequest", val: { actorId: "a1", requestId: 6, data: { tag: "KvDeleteRangeRequest", val: { start: ab(0), end: ab(255) } } } },
  KvDrop: { tag: "ToRivetKvRequest", val: { actorId: "a1", requestId: 4294967295, data: { tag: "KvDropRequest", val: null } } },
  ResponseStart: { tag: "ToRivetTunnelMessage", val: { messageId: mid(0), messageKind: { tag: "ToRivetResponseStart", val: { status: 503, headers: new Map([["x-rivet-error", "envoy.actor_not_found"], ["a", ""]]), body: null, stream: true } } } },
  ResponseStartBody: { tag: "ToRivetTunnelMessage", val: { messageId: mid(1), messageKind: { tag: "ToRivetResponseStart", val: { status: 200, headers: new Map(), body: str("ok"), stream: false } } } },
  ResponseChunk: { tag: "ToRivetTunnelMessage", val: { messageId: mid(2), messageKind: { tag: "ToRivetResponseChunk", val: { body: str("chunk"), finish: true } } } },
  ResponseAbort: { tag: "ToRivetTunnelMessage", val: { messageId: mid(3), messageKind: { tag: "ToRivetResponseAbort", val: { reason: { kind: p.HttpStreamAbortReasonKind.HandlerError, detail: "handler threw" } } } } },
  ResponseAbortBare: { tag: "ToRivetTunnelMessage", val: { messageId: mid(3), messageKind: { tag: "ToRivetResponseAbort", val: { reason: { kind: p.HttpStreamAbortReasonKind.Unknown, detail: null } } } } },
  RequestBodyWindowUpdate: { tag: "ToRivetTunnelMessage", val: { messageId: mid(4), messageKind: { tag: "ToRivetRequestBodyWindowUpdate", val: { consumedBytes: 1048576n } } } },
  RequestBodyCancel: { tag: "ToRivetTunnelMessage", val: { messageId: mid(5), messageKind: { tag: "ToRivetRequestBodyCancel", val: null } } },
  WebSocketOpen: { tag: "ToRivetTunnelMessage", val: { messageId: mid(0), messageKind: { tag: "ToRivetWebSocketOpen", val: { canHibernate: true } } } },
  WebSocketMessage: { tag: "ToRivetTunnelMessage", val: { messageId: mid(1), messageKind: { tag: "ToRivetWebSocketMessage", val: { data: ab(0, 1, 2), binary: true } } } },
  WebSocketMessageAck: { tag: "ToRivetTunnelMessage", val: { messageId: mid(65535), messageKind: { tag: "ToRivetWebSocketMessageAck", val: { index: 513 } } } },
  WebSocketClose: { tag: "ToRivetTunnelMessage", val: { messageId: mid(2), messageKind: { tag: "ToRivetWebSocketClose", val: { code: 1011, reason: "Actor not found", hibernate: true } } } },
  WebSocketCloseBare: { tag: "ToRivetTunnelMessage", val: { messageId: mid(3), messageKind: { tag: "ToRivetWebSocketClose", val: { code: null, reason: null, hibernate: false } } } },
  SqliteGetPages: { tag: "ToRivetSqliteGetPagesRequest", val: { requestId: 7, data: { actorId: "a1", pgnos: [1, 2, 4294967295], expectedGeneration: 3n, expectedHeadTxid: 18446744073709551615n } } },
  SqliteGetPagesBare: { tag: "ToRivetSqliteGetPagesRequest", val: { requestId: 8, data: { actorId: "a1", pgnos: [], expectedGeneration: null, expectedHeadTxid: null } } },
  SqliteCommit: { tag: "ToRivetSqliteCommitRequest", val: { requestId: 9, data: { actorId: "a1", dirtyPages: [{ pgno: 1, bytes: ab(1, 2, 3) }, { pgno: 2, bytes: ab() }], dbSizePages: 2, nowMs: 1700000000000n, expectedGeneration: 1n, expectedHeadTxid: null } } },
  SqliteCommitStageBegin: { tag: "ToRivetSqliteCommitStageBeginRequest", val: { requestId: 10, data: { actorId: "a1", expectedGeneration: null, expectedHeadTxid: 5n } } },
  SqliteCommitStageSegment: { tag: "ToRivetSqliteCommitStageSegmentRequest", val: { requestId: 11, data: { actorId: "a1", expectedGeneration: 2n, txid: 6n, firstPgno: 4096, dirtyPages: [{ pgno: 4096, bytes: str("page") }] } } },
  SqliteCommitFinalize: { tag: "ToRivetSqliteCommitFinalizeRequest", val: { requestId: 12, data: { actorId: "a1", expectedGeneration: 2n, txid: 6n, newDbSizePages: 8192, nowMs: -1n, segmentFirstPgnos: new Uint32Array([0, 4096, 4294967295]) } } },
  SqliteCommitFinalizeEmpty: { tag: "ToRivetSqliteCommitFinalizeRequest", val: { requestId: 13, data: { actorId: "a1", expectedGeneration: null, txid: 0n, newDbSizePages: 0, nowMs: 0n, segmentFirstPgnos: new Uint32Array([]) } } },
  SqliteExec: { tag: "ToRivetSqliteExecRequest", val: { requestId: 14, data: { namespaceId: "ns1", actorId: "a1", generation: 9n, sql: "CREATE TABLE t(x); INSERT INTO t VALUES (1);" } } },
  SqliteExecute: { tag: "ToRivetSqliteExecuteRequest", val: { requestId: 15, data: { namespaceId: "ns1", actorId: "a1", generation: 9n, sql: "SELECT ?, ?, ?, ?, ?, ?", params: values } } },
  SqliteExecuteNoParams: { tag: "ToRivetSqliteExecuteRequest", val: { requestId: 16, data: { namespaceId: "ns1", actorId: "a1", generation: 0n, sql: "SELECT 1", params: null } } },
  SqliteExecuteEmptyParams: { tag: "ToRivetSqliteExecuteRequest", val: { requestId: 17, data: { namespaceId: "ns1", actorId: "a1", generation: 0n, sql: "SELECT 1", params: [] } } },
  SqliteExecuteBatch: { tag: "ToRivetSqliteExecuteBatchRequest", val: { requestId: 18, data: { namespaceId: "ns1", actorId: "a1", generation: 9n, statements: [{ sql: "INSERT INTO t VALUES (?)", params: [values[2]] }, { sql: "DELETE FROM t", params: null }] } } },
};

const start = (config, hibernatingRequests, preloadedKv) => ({ tag: "CommandStartActor", val: { config, hibernatingRequests, preloadedKv } });
const stop = (reason) => ({ tag: "CommandStopActor", val: { reason } });
const commands = [
  { checkpoint: cp, inner: start({ name: "counter", key: null, createTs: 5n, input: null }, [{ gatewayId: gw, requestId: req }, { gatewayId: ab(9, 9, 9, 9), requestId: ab(0, 0, 0, 0) }], null) },
  { checkpoint: cp, inner: start({ name: "c", key: "", createTs: -1n, input: ab() }, [], { entries: [], requestedGetKeys: [], requestedPrefixes: [] }) },
  {
    checkpoint: cp,
    inner: start({ name: "c", key: "k1", createTs: 1700000000000n, input: str("hello") }, [], {
      entries: [{ key: ab(1), value: ab(2, 3), metadata: md }, { key: ab(), value: ab(), metadata: { version: ab(), updateTs: -1n } }],
      requestedGetKeys: [ab(1), ab(7)],
      requestedPrefixes: [ab()],
    }),
  },
  ...Object.values(p.StopActorReason).map((r) => ({ checkpoint: cp, inner: stop(r) })),
];

const envoyTunnel = {
  RequestStart: { messageId: mid(0), messageKind: { tag: "ToEnvoyRequestStart", val: { actorId: "a1", actorGeneration: 4294967295, method: "POST", path: "/action/inc?x=1", headers: new Map([["content-type", "application/octet-stream"], ["x-rivet-encoding", "bare"]]), body: ab(0xde, 0xad), stream: true, responseStream: true } } },
  RequestStartLegacy: { messageId: mid(0), messageKind: { tag: "ToEnvoyRequestStart", val: { actorId: "a1", actorGeneration: null, method: "GET", path: "/", headers: new Map(), body: null, stream: false, responseStream: false } } },
  RequestChunk: { messageId: mid(1), messageKind: { tag: "ToEnvoyRequestChunk", val: { body: ab(), finish: true } } },
  RequestAbort: { messageId: mid(2), messageKind: { tag: "ToEnvoyRequestAbort", val: { actorId: "a1", actorGeneration: 3, reason: { kind: p.HttpStreamAbortReasonKind.Cancelled, detail: "client went away" } } } },
  RequestAbortBare: { messageId: mid(2), messageKind: { tag: "ToEnvoyRequestAbort", val: { actorId: null, actorGeneration: null, reason: { kind: p.HttpStreamAbortReasonKind.InternalError, detail: null } } } },
  RequestBodyCancel: { messageId: mid(3), messageKind: { tag: "ToEnvoyRequestBodyCancel", val: null } },
  ResponseBodyWindowUpdate: { messageId: mid(4), messageKind: { tag: "ToEnvoyResponseBodyWindowUpdate", val: { consumedBytes: 18446744073709551615n } } },
  WebSocketOpen: { messageId: mid(0), messageKind: { tag: "ToEnvoyWebSocketOpen", val: { actorId: "a1", actorGeneration: 2, path: "/connect", headers: new Map([["sec-websocket-protocol", "rivet"]]) } } },
  WebSocketOpenLegacy: { messageId: mid(0), messageKind: { tag: "ToEnvoyWebSocketOpen", val: { actorId: "a1", actorGeneration: null, path: "/", headers: new Map() } } },
  WebSocketMessage: { messageId: mid(1), messageKind: { tag: "ToEnvoyWebSocketMessage", val: { data: str("hi-text"), binary: false } } },
  WebSocketClose: { messageId: mid(2), messageKind: { tag: "ToEnvoyWebSocketClose", val: { code: 1000, reason: "bye" } } },
  WebSocketCloseBare: { messageId: mid(3), messageKind: { tag: "ToEnvoyWebSocketClose", val: { code: null, reason: null } } },
};

const toEnvoy = {
  Init: { tag: "ToEnvoyInit", val: { metadata: { envoyLostThreshold: 15000n, actorStopThreshold: 1800000n, maxResponsePayloadSize: 20971520n } } },
  InitExtremes: { tag: "ToEnvoyInit", val: { metadata: { envoyLostThreshold: -1n, actorStopThreshold: 0n, maxResponsePayloadSize: 18446744073709551615n } } },
  CommandsEmpty: { tag: "ToEnvoyCommands", val: [] },
  Commands: { tag: "ToEnvoyCommands", val: commands },
  AckEventsEmpty: { tag: "ToEnvoyAckEvents", val: { lastEventCheckpoints: [] } },
  AckEvents: { tag: "ToEnvoyAckEvents", val: { lastEventCheckpoints: [cp] } },
  KvError: { tag: "ToEnvoyKvResponse", val: { requestId: 7, data: { tag: "KvErrorResponse", val: { message: "actor does not exist" } } } },
  KvGet: { tag: "ToEnvoyKvResponse", val: { requestId: 8, data: { tag: "KvGetResponse", val: { keys: [ab(1), ab(2)], values: [ab(3), ab()], metadata: [md, { version: ab(), updateTs: -1n }] } } } },
  KvList: { tag: "ToEnvoyKvResponse", val: { requestId: 9, data: { tag: "KvListResponse", val: { keys: [ab(1)], values: [ab(2)], metadata: [md] } } } },
  KvListEmpty: { tag: "ToEnvoyKvResponse", val: { requestId: 10, data: { tag: "KvListResponse", val: { keys: [], values: [], metadata: [] } } } },
  KvPut: { tag: "ToEnvoyKvResponse", val: { requestId: 11, data: { tag: "KvPutResponse", val: null } } },
  KvDelete: { tag: "ToEnvoyKvResponse", val: { requestId: 12, data: { tag: "KvDeleteResponse", val: null } } },
  KvDrop: { tag: "ToEnvoyKvResponse", val: { requestId: 13, data: { tag: "KvDropResponse", val: null } } },
  ...Object.fromEntries(Object.entries(envoyTunnel).map(([k, v]) => [k, { tag: "ToEnvoyTunnelMessage", val: v }])),
  Ping: { tag: "ToEnvoyPing", val: { ts: 1700000000000n } },
  SqliteGetPagesOk: { tag: "ToEnvoySqliteGetPagesResponse", val: { requestId: 7, data: { tag: "SqliteGetPagesOk", val: { pages: [{ pgno: 1, bytes: ab(1, 2) }, { pgno: 2, bytes: null }, { pgno: 3, bytes: ab() }], headTxid: 5n } } } },
  SqliteGetPagesErr: { tag: "ToEnvoySqliteGetPagesResponse", val: { requestId: 7, data: sqlErr } },
  SqliteCommitOk: { tag: "ToEnvoySqliteCommitResponse", val: { requestId: 9, data: { tag: "SqliteCommitOk", val: { headTxid: null } } } },
  SqliteCommitErr: { tag: "ToEnvoySqliteCommitResponse", val: { requestId: 9, data: sqlErr } },
  SqliteCommitStageBeginOk: { tag: "ToEnvoySqliteCommitStageBeginResponse", val: { requestId: 10, data: { tag: "SqliteCommitStageBeginOk", val: { txid: 6n } } } },
  SqliteCommitStageBeginErr: { tag: "ToEnvoySqliteCommitStageBeginResponse", val: { requestId: 10, data: sqlErr } },
  SqliteCommitStageSegmentOk: { tag: "ToEnvoySqliteCommitStageSegmentResponse", val: { requestId: 11, data: { tag: "SqliteCommitStageSegmentOk", val: { stagedBytes: 4096n } } } },
  SqliteCommitStageSegmentErr: { tag: "ToEnvoySqliteCommitStageSegmentResponse", val: { requestId: 11, data: sqlErr } },
  SqliteCommitFinalizeOk: { tag: "ToEnvoySqliteCommitFinalizeResponse", val: { requestId: 12, data: { tag: "SqliteCommitFinalizeOk", val: { headTxid: 6n } } } },
  SqliteCommitFinalizeErr: { tag: "ToEnvoySqliteCommitFinalizeResponse", val: { requestId: 12, data: sqlErr } },
  SqliteExecOk: { tag: "ToEnvoySqliteExecResponse", val: { requestId: 14, data: { tag: "SqliteExecOk", val: { result: { columns: execResult.columns, rows: execResult.rows } } } } },
  SqliteExecOkEmpty: { tag: "ToEnvoySqliteExecResponse", val: { requestId: 14, data: { tag: "SqliteExecOk", val: { result: { columns: [], rows: [] } } } } },
  SqliteExecErr: { tag: "ToEnvoySqliteExecResponse", val: { requestId: 14, data: sqlErr } },
  SqliteExecuteOk: { tag: "ToEnvoySqliteExecuteResponse", val: { requestId: 15, data: { tag: "SqliteExecuteOk", val: { result: { ...execResult, rows: [values] } } } } },
  SqliteExecuteErr: { tag: "ToEnvoySqliteExecuteResponse", val: { requestId: 15, data: sqlErr } },
  SqliteExecuteBatchOk: { tag: "ToEnvoySqliteExecuteBatchResponse", val: { requestId: 18, data: { tag: "SqliteExecuteBatchOk", val: { results: [execResult, { columns: [], rows: [], changes: 0n, lastInsertRowId: null }] } } } },
  SqliteExecuteBatchErr: { tag: "ToEnvoySqliteExecuteBatchResponse", val: { requestId: 18, data: sqlErr } },
};

const toEnvoyConn = {
  Ping: { tag: "ToEnvoyConnPing", val: { gatewayId: gw, requestId: req, ts: 1700000000000n } },
  Close: { tag: "ToEnvoyConnClose", val: null },
  Commands: { tag: "ToEnvoyCommands", val: commands.slice(0, 2) },
  AckEvents: { tag: "ToEnvoyAckEvents", val: { lastEventCheckpoints: [cp] } },
  TunnelMessage: { tag: "ToEnvoyTunnelMessage", val: envoyTunnel.RequestStart },
};

const toGateway = {
  Pong: { tag: "ToGatewayPong", val: { requestId: req, ts: -1n } },
  TunnelMessage: toRivet.ResponseAbort,
};

const toOutbound = {
  ActorStart: { tag: "ToOutboundActorStart", val: { namespaceId: "ns1", poolName: "default", checkpoint: cp, actorConfig: { name: "counter", key: "k", createTs: 5n, input: ab(1) } } },
};

const commandKeyData = Object.fromEntries(commands.map((c, i) => [`${c.inner.tag}${i}`, c.inner]));

// JSON view of a message: bigints as decimal strings, byte buffers as hex, maps as objects,
// typed arrays as arrays.
const replacer = (_k, v) => {
  if (typeof v === "bigint") return v.toString();
  if (v instanceof ArrayBuffer) return Buffer.from(v).toString("hex");
  if (v instanceof Map) return Object.fromEntries(v);
  if (ArrayBuffer.isView(v)) return Array.from(v);
  return v;
};

const hex = (u) => Buffer.from(u).toString("hex");
const out = [];
const sets = [
  ["ToRivet", toRivet, p.encodeToRivet, p.decodeToRivet],
  ["ToEnvoy", toEnvoy, p.encodeToEnvoy, p.decodeToEnvoy],
  ["ToEnvoyConn", toEnvoyConn, p.encodeToEnvoyConn, p.decodeToEnvoyConn],
  ["ToGateway", toGateway, p.encodeToGateway, p.decodeToGateway],
  ["ToOutbound", toOutbound, p.encodeToOutbound, p.decodeToOutbound],
  ["ActorCommandKeyData", commandKeyData, p.encodeActorCommandKeyData, p.decodeActorCommandKeyData],
];
for (const [dir, msgs, encode, decode] of sets) {
  for (const [name, m] of Object.entries(msgs)) {
    const b = encode(m);
    // The official decoder accepts its own output and gives back the same value.
    const back = JSON.stringify(decode(b), replacer);
    const json = JSON.stringify(m, replacer);
    if (back !== json) throw new Error(`${dir}/${name}: decode(encode(m)) differs:\n${back}\n${json}`);
    out.push({ name: `${dir}/${name}`, dir, hex: hex(b), json: JSON.parse(json) });
  }
}
console.log(JSON.stringify(out, null, 1));
