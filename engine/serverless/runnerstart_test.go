package serverless

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	proto "github.com/berthhq/berth/sdk/protocol/runner"
)

func TestReadRunnerEvents(t *testing.T) {
	initMsg, err := proto.EncodeServerlessInit(proto.ToServerlessServerInit{RunnerID: "r1", RunnerProtocolVersion: 7}, 7)
	if err != nil {
		t.Fatal(err)
	}
	init := "data: " + base64.StdEncoding.EncodeToString(initMsg) + "\n\n"
	ping := "event: ping\ndata:\n\n"
	long := strings.Repeat("é", 400) // 800 bytes
	for _, c := range []struct {
		name, stream string
		inits        []string
		pool         string // the error's runner_pool_error, "" for none
	}{
		{"init then pings, then the end", init + ping + ping, []string{"r1"}, `"serverless_stream_ended_early"`},
		{"a named message event and a comment", ": hi\nevent: message\n" + init[:len(init)-1] + "\n", []string{"r1"}, `"serverless_stream_ended_early"`},
		{"pings only", ping, nil, `"serverless_stream_ended_early"`},
		{"not base64", "data: !!not-base64!!\n\n" + init, nil,
			`{"serverless_invalid_sse_payload":{"message":"invalid base64 message","raw_payload":"!!not-base64!!"}}`},
		{"base64 of no message", "data: AAAA\n\n", nil,
			`{"serverless_invalid_sse_payload":{"message":"invalid payload","raw_payload":"AAAA"}}`},
		{"a long invalid payload is cut at a character boundary", "data: " + long + "\n\n", nil,
			`{"serverless_invalid_sse_payload":{"message":"invalid base64 message","raw_payload":"` + strings.Repeat("é", 256) + `"}}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			var got []string
			err := readRunnerEvents(context.Background(), strings.NewReader(c.stream), func(rid string) { got = append(got, rid) })
			if strings.Join(got, ",") != strings.Join(c.inits, ",") {
				t.Errorf("inits %v, want %v", got, c.inits)
			}
			var se *StartError
			if !errors.As(err, &se) {
				t.Fatalf("error %v, want a StartError", err)
			}
			if pe := string(se.PoolError()); pe != c.pool {
				t.Errorf("pool error %s, want %s", pe, c.pool)
			}
			if json.Valid([]byte(c.pool)) && c.pool == `"serverless_stream_ended_early"` && !errors.Is(err, ErrEndedEarly) {
				t.Errorf("an ended stream is not ErrEndedEarly")
			}
		})
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := readRunnerEvents(ctx, strings.NewReader(ping), func(string) {}); err != nil {
		t.Errorf("a stream closed by the engine: %v, want nil", err)
	}
}
