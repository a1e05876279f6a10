package apipublic

import (
	"bytes"
	"cmp"
	"encoding/base64"
	"encoding/binary"
	"net/url"
	"slices"
	"strings"

	"github.com/labstack/echo/v4"

	apitypes "github.com/berthhq/berth/api-types"
	"github.com/berthhq/berth/ops/envoy"
	"github.com/berthhq/berth/pkg/apihttp"
	"github.com/berthhq/berth/pkg/page"
)

// listEnvoys serves GET /envoys: every datacenter's page, merged, as listRunners does, with
// one difference. An envoy is named by its key, which the envoy chooses: two datacenters may
// each have an envoy with the same key, created in the same millisecond. So the merged order
// is (create_ts, envoy key, datacenter label), all descending, and the cursor names the
// datacenter too (envoyCursor); each datacenter is sent the cursor that selects its envoys
// after that position. Paging returns every envoy exactly once. A cursor that is not one of
// ours (the Rivet engine's bare create_ts) is passed on as it is.
func (s *Server) listEnvoys(c echo.Context) error {
	var q apitypes.EnvoysListQuery
	if err := apihttp.BindQuery(c, &q); err != nil {
		return err
	}
	if err := q.Check(); err != nil {
		return err
	}
	var pos *envoyPosition
	if q.Cursor != nil {
		if p, ok := decodeEnvoyCursor(*q.Cursor); ok {
			pos = &p
		}
	}
	ctx := c.Request().Context()
	pages, err := fanOutList[peerPage](ctx, s, s.deps.Topology.Datacenters, "/envoys",
		func(dc apihttp.Datacenter) (url.Values, error) {
			dq := q
			if pos != nil {
				cur := pos.peerCursor(dc.Label)
				dq.Cursor = &cur
			}
			return apihttp.EncodeQuery(dq)
		})
	if err != nil {
		return err
	}
	var all []rawEnvoy
	for i, p := range pages { // all or nothing: pages[i] is the answer of Datacenters[i]
		label := s.deps.Topology.Datacenters[i].Label
		for _, e := range p.Envoys {
			e.label = label
			all = append(all, e)
		}
	}
	slices.SortFunc(all, func(a, b rawEnvoy) int {
		if c := cmp.Compare(b.createTs, a.createTs); c != 0 {
			return c
		}
		if c := strings.Compare(b.key, a.key); c != 0 {
			return c
		}
		return cmp.Compare(b.label, a.label)
	})
	onPage := all[:min(len(all), q.Limit)]
	items := make([][]byte, len(onPage))
	for i, e := range onPage {
		items[i] = e.raw
	}
	return writeList(c, "envoys", items, page.Cursor(onPage, func(e rawEnvoy) string {
		return encodeEnvoyCursor(envoyPosition{createTs: e.createTs, label: e.label, key: e.key})
	}))
}

// envoyPosition is where a merged envoy page ended: the last envoy's create_ts, key and
// datacenter.
type envoyPosition struct {
	createTs int64
	label    uint16
	key      string
}

// envoyCursorVersion is the first byte of a public envoy cursor. api-peer's cursors start
// with 1 (ops/internal/cursor); both encode to base64 starting with 'A', never a decimal.
const envoyCursorVersion = 2

// encodeEnvoyCursor returns the public envoy cursor: base64url (no padding) of the version,
// create_ts (8 bytes, big-endian), label (2 bytes, big-endian) and the envoy key.
func encodeEnvoyCursor(p envoyPosition) string {
	b := make([]byte, 0, 11+len(p.key))
	b = append(b, envoyCursorVersion)
	b = binary.BigEndian.AppendUint64(b, uint64(p.createTs))
	b = binary.BigEndian.AppendUint16(b, p.label)
	b = append(b, p.key...)
	return base64.RawURLEncoding.EncodeToString(b)
}

// decodeEnvoyCursor parses a cursor written by encodeEnvoyCursor; ok is false for any other
// text, which the datacenters then judge.
func decodeEnvoyCursor(s string) (envoyPosition, bool) {
	if len(s) > 1024 {
		return envoyPosition{}, false
	}
	b, err := base64.RawURLEncoding.Strict().DecodeString(s)
	if err != nil || len(b) < 12 || b[0] != envoyCursorVersion || bytes.IndexByte(b[11:], 0) >= 0 {
		return envoyPosition{}, false
	}
	return envoyPosition{
		createTs: int64(binary.BigEndian.Uint64(b[1:9])),
		label:    binary.BigEndian.Uint16(b[9:11]),
		key:      string(b[11:]),
	}, true
}

// peerCursor is the api-peer cursor that selects the envoys of datacenter label that come
// after p in the merged order. An api-peer lists the envoys strictly after the (create_ts,
// key) its cursor names, by key bytes descending. A datacenter whose label sorts after p's
// (a lower label) also holds the envoys equal to p's (create_ts, key), so it is sent key +
// "\x00": nothing sorts between the two, and no envoy key contains a NUL.
func (p envoyPosition) peerCursor(label uint16) string {
	if label < p.label {
		return envoy.Cursor(p.createTs, p.key+"\x00")
	}
	return envoy.Cursor(p.createTs, p.key)
}
