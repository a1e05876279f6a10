package udb

import (
	"errors"
	"fmt"
)

// Error is a FoundationDB error. Codes are FoundationDB's, verbatim, so the fdb
// driver maps its errors one to one and callers can match on codes portably.
type Error struct {
	Code int
}

// FoundationDB error codes used by udb and its drivers.
const (
	CodeTimedOut                    = 1004
	CodeTransactionTooOld           = 1007
	CodeFutureVersion               = 1009
	CodeNotCommitted                = 1020
	CodeCommitUnknownResult         = 1021
	CodeTransactionCancelled        = 1025
	CodeTransactionTimedOut         = 1031
	CodeTooManyWatches              = 1032
	CodeWatchesDisabled             = 1034
	CodeAccessedUnreadable          = 1036
	CodeProcessBehind               = 1037
	CodeDatabaseLocked              = 1038
	CodeClusterVersionChanged       = 1039
	CodeCommitProxyMemoryLimit      = 1042
	CodeBatchTransactionThrottled   = 1051
	CodeGRVProxyMemoryLimit         = 1078
	CodeOperationCancelled          = 1101
	CodeTagThrottled                = 1213
	CodeTransactionThrottledHotShrd = 1235
	CodeTransactionRejectedRangeLck = 1242
	CodeClientInvalidOperation      = 2000
	CodeKeyOutsideLegalRange        = 2004
	CodeInvertedRange               = 2005
	CodeInvalidOptionValue          = 2006
	CodeInvalidMutationType         = 2013
	CodeUsedDuringCommit            = 2017
	CodeNoCommitVersion             = 2021
	CodeTransactionTooLarge         = 2101
	CodeKeyTooLarge                 = 2102
	CodeValueTooLarge               = 2103
	CodeExactModeWithoutLimits      = 2210
)

var errorNames = map[int]struct{ name, message string }{
	CodeTimedOut:                    {"timed_out", "Operation timed out"},
	CodeTransactionTooOld:           {"transaction_too_old", "Transaction is too old to perform reads or be committed"},
	CodeFutureVersion:               {"future_version", "Request for future version"},
	CodeNotCommitted:                {"not_committed", "Transaction not committed due to conflict with another transaction"},
	CodeCommitUnknownResult:         {"commit_unknown_result", "Transaction may or may not have committed"},
	CodeTransactionCancelled:        {"transaction_cancelled", "Operation aborted because the transaction was cancelled"},
	CodeTransactionTimedOut:         {"transaction_timed_out", "Operation aborted because the transaction timed out"},
	CodeTooManyWatches:              {"too_many_watches", "Too many watches currently set"},
	CodeWatchesDisabled:             {"watches_disabled", "Watches cannot be set if read your writes is disabled"},
	CodeAccessedUnreadable:          {"accessed_unreadable", "Read or wrote an unreadable key"},
	CodeProcessBehind:               {"process_behind", "Storage process does not have recent mutations"},
	CodeDatabaseLocked:              {"database_locked", "Database is locked"},
	CodeClusterVersionChanged:       {"cluster_version_changed", "The protocol version of the cluster has changed"},
	CodeCommitProxyMemoryLimit:      {"commit_proxy_memory_limit_exceeded", "CommitProxy commit memory limit exceeded"},
	CodeBatchTransactionThrottled:   {"batch_transaction_throttled", "Batch GRV request rate limit exceeded"},
	CodeGRVProxyMemoryLimit:         {"grv_proxy_memory_limit_exceeded", "GetReadVersion proxy memory limit exceeded"},
	CodeOperationCancelled:          {"operation_cancelled", "Asynchronous operation cancelled"},
	CodeTagThrottled:                {"tag_throttled", "Transaction tag is being throttled"},
	CodeTransactionThrottledHotShrd: {"transaction_throttled_hot_shard", "Transaction throttled due to hot shard"},
	CodeTransactionRejectedRangeLck: {"transaction_rejected_range_locked", "Transaction rejected due to range lock"},
	CodeClientInvalidOperation:      {"client_invalid_operation", "Invalid API call"},
	CodeKeyOutsideLegalRange:        {"key_outside_legal_range", "Key outside legal range"},
	CodeInvertedRange:               {"inverted_range", "Range begin key larger than end key"},
	CodeInvalidOptionValue:          {"invalid_option_value", "Option set with an invalid value"},
	CodeInvalidMutationType:         {"invalid_mutation_type", "Mutation type not recognized"},
	CodeUsedDuringCommit:            {"used_during_commit", "Operation issued while a commit was outstanding"},
	CodeNoCommitVersion:             {"no_commit_version", "Transaction is read-only and therefore does not have a commit version"},
	CodeTransactionTooLarge:         {"transaction_too_large", "Transaction exceeds byte limit"},
	CodeKeyTooLarge:                 {"key_too_large", "Key length exceeds limit"},
	CodeValueTooLarge:               {"value_too_large", "Value length exceeds limit"},
	CodeExactModeWithoutLimits:      {"exact_mode_without_limits", "Exact streaming mode requires limits, but none were given"},
}

// Name is the FoundationDB name of the code, such as "not_committed".
func (e Error) Name() string {
	if n, ok := errorNames[e.Code]; ok {
		return n.name
	}
	return "unknown_error"
}

func (e Error) Error() string {
	if n, ok := errorNames[e.Code]; ok {
		return fmt.Sprintf("udb: %s (%d): %s", n.name, e.Code, n.message)
	}
	return fmt.Sprintf("udb: error %d", e.Code)
}

// codeOf returns the udb error code in err's chain, or 0.
func codeOf(err error) int {
	var e Error
	if errors.As(err, &e) {
		return e.Code
	}
	return 0
}

// HasCode reports whether err carries the udb error code.
func HasCode(err error, code int) bool { return err != nil && codeOf(err) == code }

// IsMaybeCommitted reports whether the transaction may have committed despite
// err: the caller's transaction body must be idempotent to retry it.
func IsMaybeCommitted(err error) bool {
	switch codeOf(err) {
	case CodeCommitUnknownResult, CodeClusterVersionChanged:
		return true
	}
	return false
}

// IsRetryableNotCommitted reports whether err certainly did not commit and a
// retry may succeed.
func IsRetryableNotCommitted(err error) bool {
	switch codeOf(err) {
	case CodeNotCommitted, CodeTransactionTooOld, CodeFutureVersion, CodeDatabaseLocked,
		CodeGRVProxyMemoryLimit, CodeCommitProxyMemoryLimit, CodeTransactionThrottledHotShrd,
		CodeBatchTransactionThrottled, CodeProcessBehind, CodeTagThrottled, CodeTransactionRejectedRangeLck:
		return true
	}
	return false
}

// IsRetryable reports whether OnError retries err: FoundationDB's RETRYABLE
// predicate, the union of the maybe-committed and the not-committed errors.
func IsRetryable(err error) bool { return IsMaybeCommitted(err) || IsRetryableNotCommitted(err) }
