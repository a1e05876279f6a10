package hops

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Capture records loopback segments to and from ports with tcpdump (which needs the
// privilege to capture) into a file in dir, from when it returns until stop is called;
// stop returns the segments with payload. Only the first call stops; later ones return what it
// returned.
func Capture(dir string, ports ...int) (stop func() ([]Packet, error), err error) {
	bin, err := exec.LookPath("tcpdump")
	if err != nil {
		return nil, errors.New("tcpdump is not installed (apt-get install tcpdump)")
	}
	var filter []string
	for _, p := range ports {
		filter = append(filter, "tcp port "+strconv.Itoa(p))
	}
	file := filepath.Join(dir, "echo.pcap")
	cmd := exec.Command(bin, "-i", "lo", "-nn", "-U", "-w", file, strings.Join(filter, " or "))
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	// tcpdump says "listening on lo" once it captures.
	listening := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		var said []string
		for sc.Scan() {
			if strings.Contains(sc.Text(), "listening on") {
				listening <- nil
				for sc.Scan() {
				}
				return
			}
			said = append(said, sc.Text())
		}
		listening <- fmt.Errorf("tcpdump: %s", strings.Join(said, "; "))
	}()
	select {
	case err = <-listening:
	case <-time.After(10 * time.Second):
		err = errors.New("tcpdump did not start capturing within 10s")
	}
	if err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil, err
	}
	return sync.OnceValues(func() ([]Packet, error) {
		_ = cmd.Process.Signal(syscall.SIGINT)
		_ = cmd.Wait()
		out, err := exec.Command(bin, "-nn", "-tt", "-r", file).Output()
		os.Remove(file)
		if err != nil {
			return nil, fmt.Errorf("tcpdump -r: %w", err)
		}
		return Parse(bytes.NewReader(out))
	}), nil
}
