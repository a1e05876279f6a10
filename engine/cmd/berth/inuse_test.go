package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/berthhq/berth/pkg/udb"
)

// TestHoldStore is not a test of its own: run by TestStoreInUse in a child process, it
// opens the embedded store BERTH_TEST_HOLD_STORE names, says "held" and keeps it open until
// its stdin closes.
func TestHoldStore(t *testing.T) {
	url := os.Getenv("BERTH_TEST_HOLD_STORE")
	if url == "" {
		t.Skip("run by TestStoreInUse")
	}
	db, err := udb.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	fmt.Println("held")
	_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
}

// An embedded store another process holds: berth export and berth start say so, with the
// holder's process id.
func TestStoreInUse(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	url := "file://" + dir
	child := exec.Command(os.Args[0], "-test.run=^TestHoldStore$")
	child.Env = append(os.Environ(), "BERTH_TEST_HOLD_STORE="+url)
	stdin, err := child.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		stdin.Close()
		_ = child.Wait()
	}()
	if line, err := bufio.NewReader(stdout).ReadString('\n'); err != nil || line != "held\n" {
		t.Fatalf("the child process: %q %v", line, err)
	}
	holder := fmt.Sprintf("process %d (", child.Process.Pid)
	want := []string{"embedded: store in use: ", holder, "holds the lock of the store " + dir, "stop that engine first"}

	r := berth(t, nil, "export", "--db", url, "--out", filepath.Join(t.TempDir(), "x"))
	for _, w := range want {
		if r.code != 1 || !strings.Contains(r.err, w) {
			t.Errorf("export of a held store: exit %d, stderr %q; want %q", r.code, r.err, w)
		}
	}
	err = start(context.Background(), []string{"--db", url, "--listen", "127.0.0.1:0", "--peer-listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0"}, nil)
	for _, w := range want {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("start on a held store: %v; want %q", err, w)
		}
	}
}
