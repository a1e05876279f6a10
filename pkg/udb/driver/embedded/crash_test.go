package embedded

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/berthhq/berth/pkg/udb"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// The crash tests commit from several goroutines; every commit writes a key
// of its own and adds one to a counter in the same transaction, so after any
// crash the counter equals the number of keys (atomicity) and covers every
// acknowledged commit (durability).

const (
	crashChildDirEnv   = "BERTH_CRASH_CHILD_DIR"
	crashChildRoundEnv = "BERTH_CRASH_CHILD_ROUND"
	crashWriters       = 8
)

var (
	crashCounterKey = []byte("crash-counter")
	crashKeyPrefix  = []byte("crash/")
)

func le64(n uint64) []byte {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], n)
	return b[:]
}

// crashCommit commits one key and the counter increment, retrying retryable
// errors, and returns the commit version.
func crashCommit(ctx context.Context, db udb.Database, key []byte) (int64, error) {
	tx, err := db.CreateTransaction()
	if err != nil {
		return 0, err
	}
	defer tx.Cancel()
	for {
		tx.Set(key, key)
		tx.Atomic(udb.MutationAdd, crashCounterKey, le64(1))
		err := tx.Commit(ctx)
		if err == nil {
			return tx.GetCommittedVersion()
		}
		if err := tx.OnError(ctx, err); err != nil {
			return 0, err
		}
	}
}

// TestCrashChild is the child process of TestCrashKeepsAcknowledgedCommits:
// it commits until killed and reports each acknowledged commit on stdout as
// "ack KEY VERSION".
func TestCrashChild(t *testing.T) {
	dir := os.Getenv(crashChildDirEnv)
	if dir == "" {
		t.Skip("helper process of TestCrashKeepsAcknowledgedCommits")
	}
	round := os.Getenv(crashChildRoundEnv)
	// The parent holds stdin open; if it dies, stop rather than linger.
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		os.Exit(3)
	}()
	var mu sync.Mutex
	out := bufio.NewWriter(os.Stdout)
	emit := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(out, format+"\n", args...)
		_ = out.Flush()
	}
	db, err := Open(Options{Dir: dir})
	if err != nil {
		emit("error open: %v", err)
		os.Exit(2)
	}
	ctx := context.Background()
	deadline := time.Now().Add(2 * time.Minute) // a bound if nobody kills us
	var wg sync.WaitGroup
	for g := range crashWriters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; time.Now().Before(deadline); i++ {
				key := []byte(fmt.Sprintf("%sr%s/g%d/%07d", crashKeyPrefix, round, g, i))
				v, err := crashCommit(ctx, db, key)
				if err != nil {
					emit("error commit %s: %v", key, err)
					os.Exit(2)
				}
				emit("ack %s %d", key, v)
			}
		}()
	}
	wg.Wait()
	os.Exit(0)
}

// TestCrashKeepsAcknowledgedCommits kills a committing child process with
// SIGKILL, reopens its directory and checks that every commit the child saw
// acknowledged survived, atomically, and that versions keep increasing
// across restarts.
func TestCrashKeepsAcknowledgedCommits(t *testing.T) {
	rounds, want := 3, 300
	if testing.Short() {
		rounds, want = 2, 100
	}
	dir := t.TempDir()
	acked := map[string]int64{}
	var maxV int64 // the newest version seen acknowledged or committed
	for round := range rounds {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), crashChildDirEnv+"="+dir, crashChildRoundEnv+"="+strconv.Itoa(round))
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		stdin, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		lines := make(chan string, 1024)
		go func() {
			defer close(lines)
			sc := bufio.NewScanner(stdout)
			for sc.Scan() {
				lines <- sc.Text()
			}
		}()
		roundMin := int64(-1)
		n := 0
		parse := func(line string) {
			f := strings.Fields(line)
			switch {
			case len(f) == 3 && f[0] == "ack":
				v, err := strconv.ParseInt(f[2], 10, 64)
				if err != nil {
					t.Fatalf("round %d: bad line from child: %q", round, line)
				}
				acked[f[1]] = v
				n++
				if roundMin < 0 || v < roundMin {
					roundMin = v
				}
			case len(f) > 0 && f[0] == "error":
				t.Errorf("round %d: child: %s", round, line)
			}
		}
		prevMax := maxV
		deadline := time.NewTimer(60 * time.Second)
	wait:
		for n < want {
			select {
			case line, ok := <-lines:
				if !ok {
					_ = cmd.Wait()
					t.Fatalf("round %d: child exited after %d acks: %v\n%s", round, n, cmd.ProcessState, stderr.String())
				}
				parse(line)
			case <-deadline.C:
				break wait
			}
		}
		deadline.Stop()
		if err := cmd.Process.Kill(); err != nil { // SIGKILL: no chance to close or flush anything
			t.Fatal(err)
		}
		// Lines written before the kill are acknowledgements too.
		for line := range lines {
			parse(line)
		}
		_ = cmd.Wait()
		_ = stdin.Close()
		if n < want {
			t.Fatalf("round %d: only %d acks within the deadline (want %d)\n%s", round, n, want, stderr.String())
		}
		if t.Failed() {
			t.FailNow()
		}
		if roundMin <= prevMax {
			t.Errorf("round %d: child committed at v%d, not after v%d from before its restart", round, roundMin, prevMax)
		}
		for _, v := range acked {
			maxV = max(maxV, v)
		}
		t.Logf("round %d: killed the child after %d acks (%d in all), newest v%d", round, n, len(acked), maxV)
		maxV = checkCrashState(t, Options{Dir: dir}, acked, maxV)
	}
}

// checkCrashState reopens the store and checks it against the acknowledged
// commits: every key present, the counter equal to the number of keys and at
// least the number acknowledged, and new versions above maxV. It returns the
// version of a probe commit, the new newest version.
func checkCrashState(t *testing.T, opts Options, acked map[string]int64, maxV int64) int64 {
	t.Helper()
	ctx := context.Background()
	db, err := Open(opts)
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	defer func() {
		if err := db.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	}()
	type state struct {
		keys    map[string]bool
		counter uint64
		rv      int64
	}
	res, err := db.ReadTransact(ctx, func(tx udb.ReadTransaction) (any, error) {
		var s state
		var err error
		if s.rv, err = tx.GetReadVersion(ctx); err != nil {
			return nil, err
		}
		b, e := udb.PrefixRange(crashKeyPrefix)
		kvs, err := tx.GetRange(udb.FirstGreaterOrEqual(b), udb.FirstGreaterOrEqual(e), udb.RangeOptions{Mode: udb.StreamingModeWantAll}).All(ctx)
		if err != nil {
			return nil, err
		}
		s.keys = make(map[string]bool, len(kvs))
		for _, kv := range kvs {
			if !bytes.Equal(kv.Key, kv.Value) {
				t.Errorf("key %q holds %q", kv.Key, kv.Value)
			}
			s.keys[string(kv.Key)] = true
		}
		c, err := tx.Get(ctx, crashCounterKey)
		if err != nil {
			return nil, err
		}
		switch {
		case c == nil: // no commit survived
		case len(c) != 8:
			t.Fatalf("counter is %x, want 8 bytes", c)
		default:
			s.counter = binary.LittleEndian.Uint64(c)
		}
		return s, nil
	})
	if err != nil {
		t.Fatalf("reading after reopen: %v", err)
	}
	s := res.(state)
	missing := 0
	for k, v := range acked {
		if !s.keys[k] {
			missing++
			if missing <= 5 {
				t.Errorf("acknowledged commit of %q at v%d is lost", k, v)
			}
		}
	}
	if missing > 0 {
		t.Errorf("%d of %d acknowledged commits lost", missing, len(acked))
	}
	if s.counter != uint64(len(s.keys)) {
		t.Errorf("counter %d but %d keys: a commit was applied in part", s.counter, len(s.keys))
	}
	if s.counter < uint64(len(acked)) {
		t.Errorf("counter %d below the %d acknowledged commits", s.counter, len(acked))
	}
	if s.rv < maxV {
		t.Errorf("read version v%d after reopen is below v%d acknowledged before", s.rv, maxV)
	}
	tx, err := db.CreateTransaction()
	if err != nil {
		t.Fatal(err)
	}
	tx.Set([]byte("crash-probe"), le64(uint64(maxV)))
	if err := tx.Commit(ctx); err != nil {
		t.Fatalf("probe commit after reopen: %v", err)
	}
	v, err := tx.GetCommittedVersion()
	if err != nil {
		t.Fatal(err)
	}
	if v <= maxV {
		t.Errorf("commit after reopen got v%d, not above v%d acknowledged before", v, maxV)
	}
	t.Logf("reopened: %d keys, counter %d, %d acknowledged; read version v%d, probe commit v%d", len(s.keys), s.counter, len(acked), s.rv, v)
	return v
}

// TestCrashCloneKeepsAcknowledgedCommits simulates machine crashes in
// process: pebble's crashable in-memory filesystem is cloned as a crash
// would leave it (synced data plus a random share of unsynced data) while
// commits are in flight, and the clone must hold every commit acknowledged
// before the clone. This checks the fsync, which a killed process does not.
func TestCrashCloneKeepsAcknowledgedCommits(t *testing.T) {
	rounds, want := 4, 300
	if testing.Short() {
		rounds, want = 2, 100
	}
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 0))
	fs := vfs.NewCrashableMem()
	acked := map[string]int64{}
	var maxV int64
	for round := range rounds {
		db, err := Open(Options{Dir: "db", FS: fs})
		if err != nil {
			t.Fatalf("round %d: open: %v", round, err)
		}
		var (
			mu      sync.Mutex
			roundN  int
			ack     = map[string]int64{}
			reached = make(chan struct{})
			stop    = make(chan struct{})
			wg      sync.WaitGroup
			ctx     = context.Background()
		)
		for g := range crashWriters {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					key := []byte(fmt.Sprintf("%sr%d/g%d/%07d", crashKeyPrefix, round, g, i))
					v, err := crashCommit(ctx, db, key)
					if err != nil {
						t.Errorf("round %d: commit: %v", round, err)
						return
					}
					mu.Lock()
					ack[string(key)] = v
					roundN++
					if roundN == want {
						close(reached)
					}
					mu.Unlock()
				}
			}()
		}
		select {
		case <-reached:
		case <-time.After(60 * time.Second):
			t.Fatalf("round %d: %d commits in 60 s", round, roundN)
		}
		// Everything acknowledged so far must be in the clone; commits keep
		// running while it is taken.
		mu.Lock()
		for k, v := range ack {
			acked[k] = v
			maxV = max(maxV, v)
		}
		mu.Unlock()
		pct := []int{0, 0, 50, 100}[rng.IntN(4)]
		clone := fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: pct, RNG: rng})
		close(stop)
		wg.Wait()
		if err := db.Close(); err != nil {
			t.Fatalf("round %d: close: %v", round, err)
		}
		t.Logf("round %d (seed %d): crash clone with %d%% of unsynced data after %d acks", round, seed, pct, len(acked))
		// Continue on the crashed state: unacknowledged commits may or may
		// not be there, so forget those of this round.
		fs = clone
		maxV = checkCrashState(t, Options{Dir: "db", FS: fs}, acked, maxV)
		if t.Failed() {
			t.Fatalf("seed %d", seed)
		}
	}
}

// TestReopenKeepsData writes, closes, reopens and reads, with and without
// fsync: Close makes even unsynced commits durable.
func TestReopenKeepsData(t *testing.T) {
	for _, noSync := range []bool{false, true} {
		t.Run(fmt.Sprintf("NoSync=%v", noSync), func(t *testing.T) {
			ctx := context.Background()
			dir := t.TempDir()
			db, err := Open(Options{Dir: dir, NoSync: noSync})
			if err != nil {
				t.Fatal(err)
			}
			var last int64
			for i := range 50 {
				tx, err := db.CreateTransaction()
				if err != nil {
					t.Fatal(err)
				}
				tx.Set([]byte(fmt.Sprintf("k%03d", i)), []byte(fmt.Sprint(i)))
				tx.Set([]byte("empty"), []byte{})
				tx.Atomic(udb.MutationAdd, []byte("n"), le64(1))
				if i == 49 {
					tx.ClearRange([]byte("k010"), []byte("k020"))
				}
				if err := tx.Commit(ctx); err != nil {
					t.Fatal(err)
				}
				if last, err = tx.GetCommittedVersion(); err != nil {
					t.Fatal(err)
				}
			}
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}

			db, err = Open(Options{Dir: dir, NoSync: noSync})
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			res, err := db.ReadTransact(ctx, func(tx udb.ReadTransaction) (any, error) {
				return tx.GetRange(udb.FirstGreaterOrEqual(nil), udb.FirstGreaterOrEqual([]byte{0xff}), udb.RangeOptions{}).All(ctx)
			})
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			for _, kv := range res.([]udb.KeyValue) {
				got[string(kv.Key)] = string(kv.Value)
			}
			want := map[string]string{"empty": "", "n": string(le64(50))}
			for i := range 50 {
				if i < 10 || i >= 20 {
					want[fmt.Sprintf("k%03d", i)] = fmt.Sprint(i)
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("after reopen:\n got  %q\n want %q", got, want)
			}
			v, err := db.ReadTransact(ctx, func(tx udb.ReadTransaction) (any, error) { return tx.Get(ctx, []byte("empty")) })
			if err != nil || v.([]byte) == nil {
				t.Errorf("present-empty value after reopen: %v, %v", v, err)
			}
			tx, err := db.CreateTransaction()
			if err != nil {
				t.Fatal(err)
			}
			rv, err := tx.GetReadVersion(ctx)
			if err != nil || rv < last {
				t.Errorf("read version after reopen: v%d, %v; want >= v%d", rv, err, last)
			}
			tx.Set([]byte("after"), []byte("x"))
			if err := tx.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			if cv, _ := tx.GetCommittedVersion(); cv <= last {
				t.Errorf("commit after reopen at v%d, not above v%d", cv, last)
			}
		})
	}
}
