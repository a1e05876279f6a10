//go:build fdb

package fdb

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/berthhq/berth/pkg/udb"
	_ "github.com/berthhq/berth/pkg/udb/driver/fdb"
	"github.com/berthhq/berth/pkg/udb/transfer"
	"github.com/berthhq/berth/pkg/udb/udbtest"
	"github.com/berthhq/berth/tests/internal/harness"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
	"github.com/testcontainers/testcontainers-go"
	tcexec "github.com/testcontainers/testcontainers-go/exec"
	"github.com/testcontainers/testcontainers-go/wait"
)

// Environment:
//
//	BERTH_TEST_FDB_CLUSTER_FILE  use this running cluster instead of starting one
//	BERTH_TEST_FDB_IMAGE         the image to start (default defaultImage)
const (
	clusterEnv   = "BERTH_TEST_FDB_CLUSTER_FILE"
	imageEnv     = "BERTH_TEST_FDB_IMAGE"
	defaultImage = "foundationdb/foundationdb:7.3.69"
)

func TestMain(m *testing.M) {
	code := harness.Main(m)
	stopCluster()
	os.Exit(code)
}

var cluster struct {
	once sync.Once
	file string // cluster file, once up
	skip string // why the tests skip
	err  error
	ctr  testcontainers.Container
}

// clusterFile returns the cluster file of a FoundationDB cluster for the
// package's tests, starting one in Docker the first time; it skips t when
// there is no cluster and no Docker.
func clusterFile(t *testing.T) string {
	t.Helper()
	cluster.once.Do(startCluster)
	if cluster.skip != "" {
		t.Skip(cluster.skip)
	}
	if cluster.err != nil {
		t.Fatal(cluster.err)
	}
	return cluster.file
}

func startCluster() {
	if f := os.Getenv(clusterEnv); f != "" {
		cluster.file = f
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if why := dockerUnavailable(ctx); why != "" {
		cluster.skip = fmt.Sprintf("Docker is not available here (%s): the FoundationDB tests start %s in it; "+
			"set %s to the cluster file of a running cluster instead (make test-fdb brings one up with docker compose)", why, image(), clusterEnv)
		return
	}
	cluster.file, cluster.err = runFDB(ctx)
}

func image() string {
	if s := os.Getenv(imageEnv); s != "" {
		return s
	}
	return defaultImage
}

func dockerUnavailable(ctx context.Context) (why string) {
	defer func() {
		if r := recover(); r != nil {
			why = fmt.Sprint(r)
		}
	}()
	p, err := testcontainers.ProviderDefault.GetProvider()
	if err != nil {
		return err.Error()
	}
	defer p.Close()
	if err := p.Health(ctx); err != nil {
		return err.Error()
	}
	return ""
}

// runFDB starts FoundationDB in a container reachable at 127.0.0.1:PORT:
// FoundationDB hands clients the addresses its processes advertise, so the
// server advertises 127.0.0.1 (FDB_NETWORKING_MODE=host) on a port bound to
// the same port on the host. It configures a new single-replica in-memory
// database, waits until it is available and writes the cluster file.
func runFDB(ctx context.Context) (string, error) {
	port, err := freePort()
	if err != nil {
		return "", err
	}
	p := network.MustParsePort(fmt.Sprintf("%d/tcp", port))
	ctr, err := testcontainers.Run(ctx, image(),
		testcontainers.WithEnv(map[string]string{"FDB_NETWORKING_MODE": "host", "FDB_PORT": strconv.Itoa(port)}),
		testcontainers.WithExposedPorts(p.String()),
		testcontainers.WithHostConfigModifier(func(hc *container.HostConfig) {
			hc.PortBindings = network.PortMap{p: {{HostPort: strconv.Itoa(port)}}}
		}),
		testcontainers.WithWaitStrategyAndDeadline(2*time.Minute, wait.ForLog("Starting FDB server")),
	)
	cluster.ctr = ctr
	if err != nil {
		return "", fmt.Errorf("starting %s: %w", image(), err)
	}
	fdbcli := func(cmd string) (string, error) {
		code, r, err := ctr.Exec(ctx, []string{"fdbcli", "--timeout", "10", "--exec", cmd}, tcexec.Multiplexed())
		if err != nil {
			return "", err
		}
		out, _ := io.ReadAll(r)
		if code != 0 {
			return string(out), fmt.Errorf("fdbcli --exec %q exited %d: %s", cmd, code, out)
		}
		return string(out), nil
	}
	// On a fresh data directory the database must be created; a second
	// "configure new" says it already exists, which is as good.
	deadline := time.Now().Add(2 * time.Minute)
	for {
		out, err := fdbcli("configure new single memory")
		if err == nil || strings.Contains(out, "already exists") {
			break
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("configuring FoundationDB: %w", err)
		}
		time.Sleep(time.Second)
	}
	for {
		out, err := fdbcli("status minimal")
		if err == nil && strings.Contains(out, "The database is available") {
			break
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("FoundationDB did not become available within 2 minutes: %q %v", out, err)
		}
		time.Sleep(time.Second)
	}
	dir, err := os.MkdirTemp("", "berth-fdb-")
	if err != nil {
		return "", err
	}
	file := filepath.Join(dir, "fdb.cluster")
	if err := os.WriteFile(file, fmt.Appendf(nil, "docker:docker@127.0.0.1:%d\n", port), 0o644); err != nil {
		return "", err
	}
	return file, nil
}

func stopCluster() {
	if cluster.ctr != nil {
		_ = testcontainers.TerminateContainer(cluster.ctr)
	}
	if cluster.file != "" && os.Getenv(clusterEnv) == "" {
		os.RemoveAll(filepath.Dir(cluster.file))
	}
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

func openFDB(t testing.TB, url string) udb.Database {
	t.Helper()
	db, err := udb.Open(context.Background(), url)
	if err != nil {
		t.Fatalf("udb.Open(%q): %v", url, err)
	}
	return db
}

// TestConformance runs the udb conformance suite on FoundationDB itself:
// the suite's expectations are FoundationDB's behaviour, so this is the
// check of the suite as much as of the driver.
func TestConformance(t *testing.T) {
	url := "fdb://" + clusterFile(t)
	var mu sync.Mutex
	shared := openFDB(t, url)
	t.Cleanup(func() { mu.Lock(); defer mu.Unlock(); shared.Close() })
	udbtest.Run(t, udbtest.Harness{
		Open: func(testing.TB) udb.Database {
			mu.Lock()
			defer mu.Unlock()
			return shared
		},
		OpenWithMaxWatches: func(t testing.TB, n int) udb.Database {
			db := openFDB(t, fmt.Sprintf("%s?max_watches=%d", url, n))
			t.Cleanup(func() { db.Close() })
			return db
		},
		Reopen: func(t testing.TB, db udb.Database) udb.Database {
			mu.Lock()
			defer mu.Unlock()
			db.Close()
			shared = openFDB(t, url)
			return shared
		},
	})
}

// TestEngineSmoke runs `berth start` (built with -tags fdb) on the cluster:
// it starts, writes its default namespace there, and finds it again after a
// restart; the key space then exports and imports into an embedded store
// unchanged.
func TestEngineSmoke(t *testing.T) {
	cf := clusterFile(t)
	ctx := t.Context()
	url := "fdb://" + cf
	db := openFDB(t, url)
	defer db.Close()
	if err := udb.Update(ctx, db, func(tx udb.Transaction) error {
		tx.ClearRange(nil, []byte{0xff}) // a fresh key space for the engine
		return nil
	}); err != nil {
		t.Fatal(err)
	}

	bin := filepath.Join(t.TempDir(), "berth")
	if out, err := exec.Command("go", "build", "-tags", "fdb", "-o", bin, harness.BerthPackage).CombinedOutput(); err != nil {
		t.Fatalf("go build -tags fdb %s: %v\n%s", harness.BerthPackage, err, out)
	}
	t.Setenv("BERTH_TEST_BINARY", bin)
	e := harness.NewEngine(t, harness.Settings{}, url)
	e.Start()
	type namespaces struct {
		Namespaces []struct {
			Name string `json:"name"`
		} `json:"namespaces"`
	}
	var out namespaces
	e.GetJSON(t, "/namespaces?name=default", &out)
	if len(out.Namespaces) != 1 || out.Namespaces[0].Name != "default" {
		t.Fatalf("GET /namespaces?name=default on FoundationDB: %+v", out)
	}
	e.Stop()
	e.Start()
	out = namespaces{}
	e.GetJSON(t, "/namespaces?name=default", &out)
	if len(out.Namespaces) != 1 {
		t.Fatalf("after a restart on FoundationDB: %+v", out)
	}
	e.Stop()

	var buf bytes.Buffer
	st, err := transfer.Export(ctx, db, &buf, transfer.Options{RequireSnapshot: true})
	if err != nil {
		t.Fatalf("exporting FoundationDB: %v", err)
	}
	if st.Keys == 0 {
		t.Fatal("the engine wrote no keys to FoundationDB")
	}
	mem := openFDB(t, "mem://")
	defer mem.Close()
	if got, err := transfer.Import(ctx, mem, &buf, transfer.Options{}); err != nil || got != st {
		t.Fatalf("importing the export into an embedded store: %+v, %v; want %+v", got, err, st)
	}
}
