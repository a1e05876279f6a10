package namespace

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/berthhq/berth/ops/internal/opstest"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/rerr"
	"github.com/berthhq/berth/pkg/udb"
)

var ctx = context.Background()

func create(db udb.Database, name, display string, now int64) (Namespace, error) {
	nid := id.New(1)
	return opstest.Transact(db, func(tx udb.Transaction) (Namespace, error) {
		return Create(ctx, tx, CreateInput{NamespaceID: nid, Name: name, DisplayName: display, NowMs: now})
	})
}

func TestCreateValidation(t *testing.T) {
	tests := []struct {
		name, display, reason string
	}{
		{"default", "Default", ""},
		{"a", "A", ""},
		{"my-ns-2", "My namespace 2", ""},
		{strings.Repeat("x", MaxNameLen), strings.Repeat("y", MaxDisplayNameLen), ""},
		{"", "X", "name too short"},
		{strings.Repeat("x", MaxNameLen+1), "X", "name too long"},
		{"Upper", "X", "invalid name"},
		{"under_score", "X", "invalid name"},
		{"-lead", "X", "invalid name"},
		{"trail-", "X", "invalid name"},
		{"dou--ble", "X", "invalid name"},
		{"sp ace", "X", "invalid name"},
		{"ünï", "X", "invalid name"},
		{"ok", "", "display name too short"},
		{"ok", strings.Repeat("y", MaxDisplayNameLen+1), "display name too long"},
		{"ok", " lead", "invalid display name"},
		{"ok", "trail ", "invalid display name"},
		{"ok", "two  spaces", "invalid display name"},
		{"ok", "tab\there", "invalid display name"},
		{"ok", "new\nline", "invalid display name"},
		{"ok", "bad \xff utf8", "invalid display name"},
	}
	for _, tc := range tests {
		t.Run(tc.name+"/"+tc.display, func(t *testing.T) {
			db := opstest.Open(t)
			ns, err := create(db, tc.name, tc.display, 42)
			if tc.reason == "" {
				if err != nil {
					t.Fatalf("Create: %v", err)
				}
				got := opstest.Read(t, db, func(r udb.ReadTransaction) (Namespace, error) {
					return Get(ctx, r, GetInput{NamespaceID: ns.NamespaceID})
				})
				if got != ns || got.Name != tc.name || got.DisplayName != tc.display || got.CreateTs != 42 {
					t.Fatalf("Get = %+v, Create returned %+v", got, ns)
				}
				return
			}
			e, ok := rerr.As(err)
			if !ok || !rerr.Is(e, rerr.CodeNamespaceFailedToCreate) || e.Metadata["reason"] != tc.reason {
				t.Fatalf("Create = %v; want namespace.failed_to_create %q", err, tc.reason)
			}
			out := opstest.Read(t, db, func(r udb.ReadTransaction) (ListOutput, error) { return List(ctx, r, ListInput{}) })
			if len(out.Namespaces) != 0 {
				t.Fatalf("a refused create wrote %+v", out.Namespaces)
			}
		})
	}
}

func TestCreateDuplicateName(t *testing.T) {
	db := opstest.Open(t)
	first, err := create(db, "prod", "Prod", 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := create(db, "prod", "Other", 2); !rerr.Is(err, rerr.CodeNamespaceNameNotUnique) {
		t.Fatalf("second create = %v; want namespace.name_not_unique", err)
	}
	got := opstest.Read(t, db, func(r udb.ReadTransaction) (Namespace, error) {
		return ResolveByName(ctx, r, ResolveByNameInput{Name: "prod"})
	})
	if got != first {
		t.Fatalf("the refused create changed the namespace: %+v, want %+v", got, first)
	}
}

// Two creations of one name that both read before either commits: the
// second to commit conflicts, and its retry reports name_not_unique.
func TestCreateConcurrentSameName(t *testing.T) {
	for _, order := range []string{"a first", "b first"} {
		t.Run(order, func(t *testing.T) {
			db := opstest.Open(t)
			a, b := opstest.Begin(t, db), opstest.Begin(t, db)
			do := func(nid id.ID) func(tx udb.Transaction) error {
				return func(tx udb.Transaction) error {
					_, err := Create(ctx, tx, CreateInput{NamespaceID: nid, Name: "same", DisplayName: "Same", NowMs: 7})
					return err
				}
			}
			doA, doB := do(id.New(1)), do(id.New(1))
			if err := doA(a.Tx()); err != nil {
				t.Fatal(err)
			}
			if err := doB(b.Tx()); err != nil {
				t.Fatal(err)
			}
			first, second, doSecond := a, b, doB
			if order == "b first" {
				first, second, doSecond = b, a, doA
			}
			if err := first.Commit(); err != nil {
				t.Fatalf("first commit: %v", err)
			}
			err := second.Commit()
			if !opstest.IsConflict(err) {
				t.Fatalf("second commit = %v; want not_committed", err)
			}
			if err := second.Retry(err, doSecond); !rerr.Is(err, rerr.CodeNamespaceNameNotUnique) {
				t.Fatalf("retry = %v; want namespace.name_not_unique", err)
			}
			out := opstest.Read(t, db, func(r udb.ReadTransaction) (ListOutput, error) { return List(ctx, r, ListInput{}) })
			if len(out.Namespaces) != 1 {
				t.Fatalf("%d namespaces, want 1", len(out.Namespaces))
			}
		})
	}
}

func TestNotFound(t *testing.T) {
	db := opstest.Open(t)
	_, err := opstest.Transact(db, func(tx udb.Transaction) (Namespace, error) {
		return Get(ctx, tx, GetInput{NamespaceID: id.New(1)})
	})
	if !rerr.Is(err, rerr.CodeNamespaceNotFound) {
		t.Errorf("Get(unknown) = %v", err)
	}
	_, err = opstest.Transact(db, func(tx udb.Transaction) (Namespace, error) {
		return ResolveByName(ctx, tx, ResolveByNameInput{Name: "nope"})
	})
	if e, ok := rerr.As(err); !ok || !rerr.Is(e, rerr.CodeNamespaceNotFound) || e.Metadata["namespace"] != "nope" {
		t.Errorf("ResolveByName(unknown) = %v; want namespace.not_found naming it", err)
	}
}

func TestEnsureDefault(t *testing.T) {
	db := opstest.Open(t)
	ensure := func(now int64) EnsureDefaultOutput {
		nid := id.New(1)
		return opstest.Write(t, db, func(tx udb.Transaction) (EnsureDefaultOutput, error) {
			return EnsureDefault(ctx, tx, EnsureDefaultInput{NamespaceID: nid, NowMs: now})
		})
	}
	first := ensure(10)
	if !first.Created || first.Namespace.Name != DefaultName || first.Namespace.DisplayName != DefaultDisplayName || first.Namespace.CreateTs != 10 {
		t.Fatalf("first EnsureDefault = %+v", first)
	}
	second := ensure(20)
	if second.Created || second.Namespace != first.Namespace {
		t.Fatalf("second EnsureDefault = %+v; want the first's namespace, not created", second)
	}

	// Two engines starting at once: one creates, the other finds it.
	db2 := opstest.Open(t)
	a, b := opstest.Begin(t, db2), opstest.Begin(t, db2)
	run := func(h *opstest.Held) (EnsureDefaultOutput, error) {
		return EnsureDefault(ctx, h.Tx(), EnsureDefaultInput{NamespaceID: id.New(1), NowMs: 5})
	}
	if _, err := run(a); err != nil {
		t.Fatal(err)
	}
	if _, err := run(b); err != nil {
		t.Fatal(err)
	}
	if err := a.Commit(); err != nil {
		t.Fatal(err)
	}
	err := b.Commit()
	if !opstest.IsConflict(err) {
		t.Fatalf("second commit = %v; want not_committed", err)
	}
	var retried EnsureDefaultOutput
	if err := b.Retry(err, func(tx udb.Transaction) (err error) {
		retried, err = EnsureDefault(ctx, tx, EnsureDefaultInput{NamespaceID: id.New(1), NowMs: 6})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if retried.Created {
		t.Fatal("the retried EnsureDefault created a second default namespace")
	}
}

func TestList(t *testing.T) {
	db := opstest.Open(t)
	names := []string{"delta", "alpha", "echo", "charlie", "bravo"}
	byName := map[string]Namespace{}
	for i, n := range names {
		ns, err := create(db, n, strings.ToUpper(n), int64(i))
		if err != nil {
			t.Fatal(err)
		}
		byName[n] = ns
	}
	list := func(in ListInput) (ListOutput, error) {
		return opstest.Transact(db, func(tx udb.Transaction) (ListOutput, error) { return List(ctx, tx, in) })
	}
	namesOf := func(out ListOutput) string {
		var s []string
		for _, ns := range out.Namespaces {
			if ns != byName[ns.Name] {
				t.Errorf("listed %+v, created %+v", ns, byName[ns.Name])
			}
			s = append(s, ns.Name)
		}
		if out.Cursor != nil {
			s = append(s, "cursor="+*out.Cursor)
		}
		return strings.Join(s, ",")
	}
	tests := []struct {
		in   ListInput
		want string
	}{
		{ListInput{}, "alpha,bravo,charlie,delta,echo,cursor=echo"},
		{ListInput{Limit: 2}, "alpha,bravo,cursor=bravo"},
		{ListInput{Limit: 2, AfterName: "bravo"}, "charlie,delta,cursor=delta"},
		{ListInput{Limit: 2, AfterName: "delta"}, "echo,cursor=echo"},
		{ListInput{Limit: 2, AfterName: "echo"}, ""},
		{ListInput{Limit: 5}, "alpha,bravo,charlie,delta,echo,cursor=echo"},
		{ListInput{Name: "charlie"}, "charlie"},
		{ListInput{Name: "charlie", Limit: 1, AfterName: "delta"}, "charlie"},
		{ListInput{Name: "zulu"}, ""},
		{ListInput{NamespaceIDs: []id.ID{byName["echo"].NamespaceID, id.New(1), byName["alpha"].NamespaceID, byName["echo"].NamespaceID}}, "alpha,echo"},
		// A filtered listing holds every match, without a cursor (the Rivet engine's).
		{ListInput{NamespaceIDs: []id.ID{byName["echo"].NamespaceID, byName["alpha"].NamespaceID}, Limit: 1}, "alpha,echo"},
		{ListInput{NamespaceIDs: []id.ID{byName["echo"].NamespaceID, byName["alpha"].NamespaceID}, Name: "alpha"}, "alpha"},
		{ListInput{NamespaceIDs: []id.ID{byName["echo"].NamespaceID}, Name: "alpha"}, ""},
	}
	for _, tc := range tests {
		out, err := list(tc.in)
		if err != nil {
			t.Fatalf("List(%+v): %v", tc.in, err)
		}
		if got := namesOf(out); got != tc.want {
			t.Errorf("List(%+v) = %q, want %q", tc.in, got, tc.want)
		}
	}
	if _, err := list(ListInput{Limit: -1}); !rerr.Is(err, rerr.CodeAPIBadRequest) {
		t.Errorf("List(limit -1) = %v; want api.bad_request", err)
	}
}

func TestJSON(t *testing.T) {
	ns := Namespace{NamespaceID: id.New(1), Name: "default", DisplayName: "Default", CreateTs: 5}
	b, err := json.Marshal(ns)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"namespace_id":"` + ns.NamespaceID.String() + `","name":"default","display_name":"Default","create_ts":5}`
	if string(b) != want {
		t.Fatalf("JSON = %s\nwant   %s", b, want)
	}
}
