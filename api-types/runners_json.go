package apitypes

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"github.com/berthhq/berth/ops/runner"
)

// The runner list is berth's hottest response, so its JSON is written by hand: the same
// bytes as encoding/json writes for RunnersListResponse through echo (c.JSON), HTML-safe
// escaping and the final newline included (TestRunnerJSONMatchesEncodingJSON and
// FuzzRunnerJSON check it), without reflection and with one buffer per response.

// WriteRunnersList answers 200 with RunnersListResponse{runners, {cursor}}, as c.JSON would.
func WriteRunnersList(c echo.Context, runners []runner.Runner, cursor *string) error {
	b := make([]byte, 0, 64+400*len(runners))
	b = append(b, `{"runners":[`...)
	for i := range runners {
		if i > 0 {
			b = append(b, ',')
		}
		var err error
		if b, err = AppendRunner(b, &runners[i]); err != nil {
			return err
		}
	}
	b = append(b, `],"pagination":{"cursor":`...)
	if cursor == nil {
		b = append(b, "null"...)
	} else {
		b = appendString(b, *cursor)
	}
	b = append(b, "}}\n"...)
	return c.Blob(http.StatusOK, echo.MIMEApplicationJSON, b)
}

func appendIntPtr(b []byte, v *int64) []byte {
	if v == nil {
		return append(b, "null"...)
	}
	return strconv.AppendInt(b, *v, 10)
}

// appendRawJSON appends a json.RawMessage as encoding/json does: null when nil, else the
// value compacted, with <, >, &, U+2028 and U+2029 escaped.
func appendRawJSON(b []byte, raw json.RawMessage) ([]byte, error) {
	if raw == nil {
		return append(b, "null"...), nil
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		_, err = json.Marshal(raw) // encoding/json's error, for the log
		return nil, err
	}
	if !needsHTMLEscape(buf.Bytes()) {
		return append(b, buf.Bytes()...), nil
	}
	out := bytes.NewBuffer(b)
	json.HTMLEscape(out, buf.Bytes())
	return out.Bytes(), nil
}

func needsHTMLEscape(b []byte) bool {
	return bytes.ContainsAny(b, "<>&") || bytes.Contains(b, []byte("\u2028")) || bytes.Contains(b, []byte("\u2029"))
}

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string, escaped as encoding/json escapes it (HTML-safe;
// invalid UTF-8 becomes U+FFFD).
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// AppendRunner appends r as JSON to b, byte for byte as encoding/json encodes it. It fails
// only when r.Metadata is not valid JSON, as encoding/json does.
func AppendRunner(b []byte, r *runner.Runner) ([]byte, error) {
	b = append(b, `{"runner_id":"`...)
	b, _ = r.RunnerID.AppendText(b) // never fails
	b = append(b, `","namespace_id":"`...)
	b, _ = r.NamespaceID.AppendText(b)
	b = append(b, `","datacenter":`...)
	b = appendString(b, r.Datacenter)
	b = append(b, `,"name":`...)
	b = appendString(b, r.Name)
	b = append(b, `,"key":`...)
	b = appendString(b, r.Key)
	b = append(b, `,"version":`...)
	b = strconv.AppendUint(b, uint64(r.Version), 10)
	b = append(b, `,"total_slots":`...)
	b = strconv.AppendUint(b, uint64(r.TotalSlots), 10)
	b = append(b, `,"remaining_slots":`...)
	b = strconv.AppendUint(b, uint64(r.RemainingSlots), 10)
	b = append(b, `,"create_ts":`...)
	b = strconv.AppendInt(b, r.CreateTs, 10)
	b = append(b, `,"drain_ts":`...)
	b = appendIntPtr(b, r.DrainTs)
	b = append(b, `,"stop_ts":`...)
	b = appendIntPtr(b, r.StopTs)
	b = append(b, `,"last_ping_ts":`...)
	b = strconv.AppendInt(b, r.LastPingTs, 10)
	b = append(b, `,"last_connected_ts":`...)
	b = appendIntPtr(b, r.LastConnectedTs)
	b = append(b, `,"last_rtt":`...)
	b = strconv.AppendUint(b, uint64(r.LastRtt), 10)
	b = append(b, `,"metadata":`...)
	b, err := appendRawJSON(b, r.Metadata)
	if err != nil {
		return nil, err
	}
	return append(b, '}'), nil
}
