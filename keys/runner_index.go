package keys

import (
	"math"

	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/tuple"
)

// Runner index keys of a namespace (docs/design.md, "Key space"), in the
// pegboard subspace. The create_ts indexes sort by (create_ts, runner_id):
// lists scan them in reverse, newest first, and page with
// CreateTsRange.Before. Their value is the runner's workflow id, which berth,
// having no workflow engine, sets to the zero ID or the runner's own id.

// ActiveRunnerKey is (NAMESPACE, namespace_id, RUNNER, ACTIVE, create_ts,
// runner_id) → workflow id: the namespace's runners that have not stopped.
type ActiveRunnerKey struct {
	Namespace id.ID
	CreateTs  int64
	RunnerID  id.ID
}

func (k ActiveRunnerKey) Pack() []byte {
	return pegboard.Pack(tuple.Tuple{tagNamespace, k.Namespace, tagRunner, tagActive, k.CreateTs, k.RunnerID})
}

// UnpackActiveRunnerKey parses an ActiveRunnerKey, checking every constant segment.
func UnpackActiveRunnerKey(b []byte) (ActiveRunnerKey, error) {
	t, err := unpack("ActiveRunnerKey", pegboard, b, tagNamespace, anyID, tagRunner, tagActive, anyInt, anyID)
	if err != nil {
		return ActiveRunnerKey{}, err
	}
	return ActiveRunnerKey{Namespace: t[1].(id.ID), CreateTs: t[4].(int64), RunnerID: t[5].(id.ID)}, nil
}

func (ActiveRunnerKey) Encode(workflowID id.ID) []byte { return encodeID(workflowID) }
func (ActiveRunnerKey) Decode(b []byte) (id.ID, error) { return decodeID("ActiveRunnerKey", b) }

// ActiveRunnerKeyRange is the ActiveRunnerKey entries of namespace ns.
func ActiveRunnerKeyRange(ns id.ID) CreateTsRange[id.ID] {
	return newCreateTsRange[id.ID](pegboard, tuple.Tuple{tagNamespace, ns, tagRunner, tagActive})
}

// AllRunnerKey is (NAMESPACE, namespace_id, RUNNER, ALL, create_ts,
// runner_id) → workflow id: every runner of the namespace, stopped ones
// included.
type AllRunnerKey struct {
	Namespace id.ID
	CreateTs  int64
	RunnerID  id.ID
}

func (k AllRunnerKey) Pack() []byte {
	return pegboard.Pack(tuple.Tuple{tagNamespace, k.Namespace, tagRunner, tagAll, k.CreateTs, k.RunnerID})
}

// UnpackAllRunnerKey parses an AllRunnerKey, checking every constant segment.
func UnpackAllRunnerKey(b []byte) (AllRunnerKey, error) {
	t, err := unpack("AllRunnerKey", pegboard, b, tagNamespace, anyID, tagRunner, tagAll, anyInt, anyID)
	if err != nil {
		return AllRunnerKey{}, err
	}
	return AllRunnerKey{Namespace: t[1].(id.ID), CreateTs: t[4].(int64), RunnerID: t[5].(id.ID)}, nil
}

func (AllRunnerKey) Encode(workflowID id.ID) []byte { return encodeID(workflowID) }
func (AllRunnerKey) Decode(b []byte) (id.ID, error) { return decodeID("AllRunnerKey", b) }

// AllRunnerKeyRange is the AllRunnerKey entries of namespace ns.
func AllRunnerKeyRange(ns id.ID) CreateTsRange[id.ID] {
	return newCreateTsRange[id.ID](pegboard, tuple.Tuple{tagNamespace, ns, tagRunner, tagAll})
}

// ActiveRunnerByNameKey is (NAMESPACE, namespace_id, RUNNER, BY_NAME, ACTIVE,
// name, create_ts, runner_id) → workflow id: the active runners of one name.
type ActiveRunnerByNameKey struct {
	Namespace id.ID
	Name      string
	CreateTs  int64
	RunnerID  id.ID
}

func (k ActiveRunnerByNameKey) Pack() []byte {
	return pegboard.Pack(tuple.Tuple{tagNamespace, k.Namespace, tagRunner, tagByName, tagActive, k.Name, k.CreateTs, k.RunnerID})
}

// UnpackActiveRunnerByNameKey parses an ActiveRunnerByNameKey, checking every constant segment.
func UnpackActiveRunnerByNameKey(b []byte) (ActiveRunnerByNameKey, error) {
	t, err := unpack("ActiveRunnerByNameKey", pegboard, b, tagNamespace, anyID, tagRunner, tagByName, tagActive, anyString, anyInt, anyID)
	if err != nil {
		return ActiveRunnerByNameKey{}, err
	}
	return ActiveRunnerByNameKey{Namespace: t[1].(id.ID), Name: t[5].(string), CreateTs: t[6].(int64), RunnerID: t[7].(id.ID)}, nil
}

func (ActiveRunnerByNameKey) Encode(workflowID id.ID) []byte { return encodeID(workflowID) }
func (ActiveRunnerByNameKey) Decode(b []byte) (id.ID, error) {
	return decodeID("ActiveRunnerByNameKey", b)
}

// ActiveRunnerByNameKeyRange is the ActiveRunnerByNameKey entries of runners
// named name in namespace ns.
func ActiveRunnerByNameKeyRange(ns id.ID, name string) CreateTsRange[id.ID] {
	return newCreateTsRange[id.ID](pegboard, tuple.Tuple{tagNamespace, ns, tagRunner, tagByName, tagActive, name})
}

// AllRunnerByNameKey is (NAMESPACE, namespace_id, RUNNER, BY_NAME, ALL, name,
// create_ts, runner_id) → workflow id: every runner of one name.
type AllRunnerByNameKey struct {
	Namespace id.ID
	Name      string
	CreateTs  int64
	RunnerID  id.ID
}

func (k AllRunnerByNameKey) Pack() []byte {
	return pegboard.Pack(tuple.Tuple{tagNamespace, k.Namespace, tagRunner, tagByName, tagAll, k.Name, k.CreateTs, k.RunnerID})
}

// UnpackAllRunnerByNameKey parses an AllRunnerByNameKey, checking every constant segment.
func UnpackAllRunnerByNameKey(b []byte) (AllRunnerByNameKey, error) {
	t, err := unpack("AllRunnerByNameKey", pegboard, b, tagNamespace, anyID, tagRunner, tagByName, tagAll, anyString, anyInt, anyID)
	if err != nil {
		return AllRunnerByNameKey{}, err
	}
	return AllRunnerByNameKey{Namespace: t[1].(id.ID), Name: t[5].(string), CreateTs: t[6].(int64), RunnerID: t[7].(id.ID)}, nil
}

func (AllRunnerByNameKey) Encode(workflowID id.ID) []byte { return encodeID(workflowID) }
func (AllRunnerByNameKey) Decode(b []byte) (id.ID, error) {
	return decodeID("AllRunnerByNameKey", b)
}

// AllRunnerByNameKeyRange is the AllRunnerByNameKey entries of runners named
// name in namespace ns.
func AllRunnerByNameKeyRange(ns id.ID, name string) CreateTsRange[id.ID] {
	return newCreateTsRange[id.ID](pegboard, tuple.Tuple{tagNamespace, ns, tagRunner, tagByName, tagAll, name})
}

// RunnerByKeyKey is (NAMESPACE, namespace_id, RUNNER, BY_NAME_AND_KEY, name,
// runner_key) → RunnerByKeyValue: the runner currently registered with that
// name and key, so a reconnecting runner process finds its runner id.
type RunnerByKeyKey struct {
	Namespace id.ID
	Name      string
	Key       string
}

func (k RunnerByKeyKey) Pack() []byte {
	return pegboard.Pack(tuple.Tuple{tagNamespace, k.Namespace, tagRunner, tagByNameAndKey, k.Name, k.Key})
}

// UnpackRunnerByKeyKey parses a RunnerByKeyKey, checking every constant segment.
func UnpackRunnerByKeyKey(b []byte) (RunnerByKeyKey, error) {
	t, err := unpack("RunnerByKeyKey", pegboard, b, tagNamespace, anyID, tagRunner, tagByNameAndKey, anyString, anyString)
	if err != nil {
		return RunnerByKeyKey{}, err
	}
	return RunnerByKeyKey{Namespace: t[1].(id.ID), Name: t[4].(string), Key: t[5].(string)}, nil
}

func (RunnerByKeyKey) Encode(v RunnerByKeyValue) []byte { return encodeRunnerByKey(v) }
func (RunnerByKeyKey) Decode(b []byte) (RunnerByKeyValue, error) {
	return decodeRunnerByKey("RunnerByKeyKey", b)
}

// RunnerNameKey is (NAMESPACE, namespace_id, RUNNER, NAME, name) → empty: the
// runner names ever seen in the namespace (written by runners only, never by
// envoys), listed in name order.
type RunnerNameKey struct {
	Namespace id.ID
	Name      string
}

func (k RunnerNameKey) Pack() []byte {
	return pegboard.Pack(tuple.Tuple{tagNamespace, k.Namespace, tagRunner, tagName, k.Name})
}

// UnpackRunnerNameKey parses a RunnerNameKey, checking every constant segment.
func UnpackRunnerNameKey(b []byte) (RunnerNameKey, error) {
	t, err := unpack("RunnerNameKey", pegboard, b, tagNamespace, anyID, tagRunner, tagName, anyString)
	if err != nil {
		return RunnerNameKey{}, err
	}
	return RunnerNameKey{Namespace: t[1].(id.ID), Name: t[4].(string)}, nil
}

func (RunnerNameKey) Encode(Empty) []byte            { return encodeEmpty() }
func (RunnerNameKey) Decode(b []byte) (Empty, error) { return decodeEmpty("RunnerNameKey", b) }

// RunnerNameKeyRange is the RunnerNameKey entries of namespace ns.
func RunnerNameKeyRange(ns id.ID) NameRange {
	return NameRange{prefix: pegboard.Pack(tuple.Tuple{tagNamespace, ns, tagRunner, tagName})}
}

// RunnerAllocIdxKey orders a pool's runners for actor allocation:
// (NAMESPACE, RUNNER_ALLOC_IDX, namespace_id, name, -version,
// -remaining_millislots, last_ping_ts, runner_id) → RunnerAllocIdxValue.
//
// Version and free millislots are stored negated so that a forward scan
// meets the newest version first, then within a version the emptiest runner
// (most free slots) first, then the runner whose ping is oldest, then by
// runner id. RemainingMillislots is RemainingMillislots(remaining, total).
// The entry moves on every ping and whenever a slot change changes its
// RemainingMillislots (not on every slot change: rewriting an unchanged entry
// leaves obsolete versions in the store that every scan of the index steps
// over until compaction); whoever clears the old entry must add a read
// conflict on it in the same transaction. Only runners
// that are neither draining nor expired have an entry.
//
// Rivet negates the version as an i32; berth negates it as an i64, which
// gives the same bytes for every version below 2^31 and keeps the order for
// larger ones.
type RunnerAllocIdxKey struct {
	Namespace           id.ID
	Name                string
	Version             uint32
	RemainingMillislots uint32
	LastPingTs          int64
	RunnerID            id.ID
}

// RemainingMillislots is the share of free slots in thousandths, rounded up
// (ceil(remaining*1000/total)), 0 when total is 0. Rounding up keeps a runner
// with a few free slots out of the "full" bucket 0: Rivet rounds down, so a
// runner of 10,000 slots with 9 free takes no more actors there.
func RemainingMillislots(remaining, total uint32) uint32 {
	if total == 0 || remaining == 0 {
		return 0
	}
	return uint32((uint64(min(remaining, total))*1000 + uint64(total) - 1) / uint64(total))
}

func (k RunnerAllocIdxKey) Pack() []byte {
	return pegboard.Pack(tuple.Tuple{tagNamespace, tagRunnerAllocIdx, k.Namespace, k.Name,
		-int64(k.Version), -int64(k.RemainingMillislots), k.LastPingTs, k.RunnerID})
}

// UnpackRunnerAllocIdxKey parses a RunnerAllocIdxKey, checking every constant
// segment and that the negated fields are in range.
func UnpackRunnerAllocIdxKey(b []byte) (RunnerAllocIdxKey, error) {
	const name = "RunnerAllocIdxKey"
	t, err := unpack(name, pegboard, b, tagNamespace, tagRunnerAllocIdx, anyID, anyString, anyInt, anyInt, anyInt, anyID)
	if err != nil {
		return RunnerAllocIdxKey{}, err
	}
	version, err := unnegate(name, b, "version", t[4].(int64))
	if err != nil {
		return RunnerAllocIdxKey{}, err
	}
	slots, err := unnegate(name, b, "remaining_millislots", t[5].(int64))
	if err != nil {
		return RunnerAllocIdxKey{}, err
	}
	return RunnerAllocIdxKey{Namespace: t[2].(id.ID), Name: t[3].(string), Version: version,
		RemainingMillislots: slots, LastPingTs: t[6].(int64), RunnerID: t[7].(id.ID)}, nil
}

func (RunnerAllocIdxKey) Encode(v RunnerAllocIdxValue) []byte { return encodeRunnerAllocIdx(v) }
func (RunnerAllocIdxKey) Decode(b []byte) (RunnerAllocIdxValue, error) {
	return decodeRunnerAllocIdx("RunnerAllocIdxKey", b)
}

// RunnerAllocIdxKeyRange is the allocation index of the runners named name
// in namespace ns, in allocation order.
func RunnerAllocIdxKeyRange(ns id.ID, name string) (begin, end []byte) {
	return prefixRange(pegboard.Pack(tuple.Tuple{tagNamespace, tagRunnerAllocIdx, ns, name}))
}

// unnegate reverses the negation of a u32 stored as -v.
func unnegate(name string, b []byte, field string, v int64) (uint32, error) {
	if v > 0 || v < -math.MaxUint32 {
		return 0, badKey(name, b, "negated %s %d out of range [-%d, 0]", field, v, uint32(math.MaxUint32))
	}
	return uint32(-v), nil
}

// RunnerAllocIdxOlderRange is the part of RunnerAllocIdxKeyRange(ns, name)
// holding runners of versions below version: the ones a version-upgrade
// drain drains.
func RunnerAllocIdxOlderRange(ns id.ID, name string, version uint32) (begin, end []byte) {
	_, end = RunnerAllocIdxKeyRange(ns, name)
	return pegboard.Pack(tuple.Tuple{tagNamespace, tagRunnerAllocIdx, ns, name, -int64(version) + 1}), end
}
