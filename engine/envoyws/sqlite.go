package envoyws

import (
	proto "github.com/berthhq/berth/pkg/protocol/envoy"
)

// SQLite requests (ToRivet tags 7–14): berth has no actor SQLite page store yet, so each is
// answered at once, under its request id, with a SqliteErrorResponse that names the feature
// and the request. The socket stays open.

// SqliteErrorGroup and SqliteErrorCode are the error every SQLite request gets.
const (
	SqliteErrorGroup = "actor"
	SqliteErrorCode  = "sqlite_not_supported"
)

func sqliteError(op string) proto.SqliteErrorResponse {
	return proto.SqliteErrorResponse{
		Group: SqliteErrorGroup, Code: SqliteErrorCode,
		Message: "Actor SQLite storage is not supported by this engine yet (" + op + " refused).",
	}
}

// sqliteRefusal returns the refusal of SQLite request m; false if m is not one.
func sqliteRefusal(m proto.ToRivet) (proto.ToEnvoy, bool) {
	switch m := m.(type) {
	case proto.ToRivetSqliteGetPagesRequest:
		return proto.ToEnvoySqliteGetPagesResponse{RequestID: m.RequestID, Data: sqliteError("get_pages")}, true
	case proto.ToRivetSqliteCommitRequest:
		return proto.ToEnvoySqliteCommitResponse{RequestID: m.RequestID, Data: sqliteError("commit")}, true
	case proto.ToRivetSqliteCommitStageBeginRequest:
		return proto.ToEnvoySqliteCommitStageBeginResponse{RequestID: m.RequestID, Data: sqliteError("commit_stage_begin")}, true
	case proto.ToRivetSqliteCommitStageSegmentRequest:
		return proto.ToEnvoySqliteCommitStageSegmentResponse{RequestID: m.RequestID, Data: sqliteError("commit_stage_segment")}, true
	case proto.ToRivetSqliteCommitFinalizeRequest:
		return proto.ToEnvoySqliteCommitFinalizeResponse{RequestID: m.RequestID, Data: sqliteError("commit_finalize")}, true
	case proto.ToRivetSqliteExecRequest:
		return proto.ToEnvoySqliteExecResponse{RequestID: m.RequestID, Data: sqliteError("exec")}, true
	case proto.ToRivetSqliteExecuteRequest:
		return proto.ToEnvoySqliteExecuteResponse{RequestID: m.RequestID, Data: sqliteError("execute")}, true
	case proto.ToRivetSqliteExecuteBatchRequest:
		return proto.ToEnvoySqliteExecuteBatchResponse{RequestID: m.RequestID, Data: sqliteError("execute_batch")}, true
	}
	return nil, false
}
