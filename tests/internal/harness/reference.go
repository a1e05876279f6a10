package harness

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/berthhq/berth/bench/sidebyside"
)

// referenceReadyWithin bounds how long the Rivet engine may take to answer after its start.
const referenceReadyWithin = 60 * time.Second

// StartReference runs the Rivet engine 2.3.19 (sidebyside.ReferenceBinary and
// ReferenceCommand, with the extra configuration sections given) on loopback ports with its
// store in a temporary directory, waits until it answers /metadata, and returns its URL and
// process id. It skips tb when the binary cannot be had.
func StartReference(tb testing.TB, extra ...map[string]any) (string, int) {
	tb.Helper()
	bin, err := sidebyside.ReferenceBinary(tb.Logf)
	if err != nil {
		tb.Skip(err)
	}
	ports := FreePorts(tb, 3)
	cmd, err := sidebyside.ReferenceCommand(bin, tb.TempDir(), ports[0], ports[1], ports[2], extra...)
	if err != nil {
		tb.Fatal(err)
	}
	p := StartProc(tb, "rivet-engine", cmd)
	url := fmt.Sprintf("http://127.0.0.1:%d", ports[0])
	client := &http.Client{Timeout: time.Second}
	defer client.CloseIdleConnections()
	deadline := time.Now().Add(referenceReadyWithin)
	for {
		resp, err := client.Get(url + "/metadata")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return url, p.PID()
			}
		}
		select {
		case <-p.Exited():
			tb.Fatalf("rivet-engine exited before it answered:\n%s", Tail(p.Stderr(), 30))
		case <-time.After(50 * time.Millisecond): // polling interval
		}
		if time.Now().After(deadline) {
			tb.Fatalf("rivet-engine does not answer /metadata after %v (last error %v)", referenceReadyWithin, err)
		}
	}
}
