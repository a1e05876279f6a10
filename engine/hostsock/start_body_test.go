package hostsock_test

import (
	"encoding/binary"
	"reflect"
	"testing"

	"github.com/berthhq/berth/engine/hostsock"
	"github.com/berthhq/berth/ops/actor"
	"github.com/berthhq/berth/pkg/id"
	proto "github.com/berthhq/berth/sdk/protocol/envoy"
)

// A serverless /start body is the version as a little-endian u16, then one start command
// of that version (docs/serverless.md § 4.2), which an envoy decodes back.
func TestEnvoyStartBody(t *testing.T) {
	aid := id.New(1)
	key := "k1"
	cmd := actor.Command{Host: actor.ServerlessHost(id.New(1), aid, 3), Checkpoint: actor.Checkpoint{ActorID: aid, Generation: 3},
		Start: &actor.Start{Name: "counter", Key: &key, CreateTs: 1700000000123, Input: []byte("hi")}}
	b, err := hostsock.EnvoyStartBody(cmd, 8)
	if err != nil {
		t.Fatal(err)
	}
	if v := binary.LittleEndian.Uint16(b); v != 8 {
		t.Fatalf("version prefix %d, want 8", v)
	}
	m, err := proto.DecodeToEnvoy(b[2:], 8)
	if err != nil {
		t.Fatal(err)
	}
	want := proto.ToEnvoyCommands{{
		Checkpoint: proto.ActorCheckpoint{ActorID: aid.String(), Generation: 3, Index: 0},
		Inner: proto.CommandStartActor{Config: proto.ActorConfig{Name: "counter", Key: &key, CreateTs: 1700000000123, Input: []byte("hi")},
			HibernatingRequests: []proto.HibernatingRequest{}},
	}}
	if !reflect.DeepEqual(m, want) {
		t.Errorf("decoded %#v\nwant    %#v", m, want)
	}
	if _, err := hostsock.EnvoyStartBody(cmd, 99); err == nil {
		t.Error("a body of an unknown protocol version was made")
	}
}
