package reference

import "strings"

// An intended difference: where berth answers otherwise than the Rivet engine on purpose. A
// step whose values differ is accepted only when entries hold it: one naming its scenario
// and step with both whole values (Path empty), or one for each place it differs at (Path
// and the two values there). An entry that matches nothing in a run fails the run (the
// behaviour changed and the table must say so). docs/compat.md publishes the table
// (TestCompatDoc keeps it in step).
type intendedDifference struct {
	// Scenario and Step name the step; a * in them stands for any text, so that one entry
	// can hold a rule that many steps show.
	Scenario, Step string
	Path           string // a JSON path in the step's value ("$" for the whole value)
	// Reference and Berth are the values, canonical JSON as the transcripts hold them.
	Reference, Berth string
	// Behaviour says in a few words what is observed; Why, why berth differs.
	Behaviour, Why string
}

var differences = []intendedDifference{
	{
		Scenario: "paging_actors", Step: "actors by key page 2", Path: "$",
		Reference: `{"items":["<id 2>"],"pagination":{"cursor":"<cursor>"}}`,
		Berth:     `{"items":[],"pagination":{"cursor":null}}`,
		Behaviour: "GET /actors by name and key, the page after the key's actor",
		Why:       "the reference's cursor does not move past the key's actor, so a client paging by cursor gets that page for ever; berth ends the listing with an empty page, as every other list does",
	},
	{
		Scenario: "paging_actors", Step: "actors cursor garbage", Path: "$",
		Reference: `{"error":"core.internal_error","status":500}`,
		Berth:     `{"error":"api.bad_request","status":400}`,
		Behaviour: "GET /actors with a cursor that is not one",
		Why:       "a malformed input is the client's error: 400 naming the field, not a 500",
	},
	{
		Scenario: "paging_actors", Step: "actors cursor 99999999999999999999", Path: "$",
		Reference: `{"error":"core.internal_error","status":500}`,
		Berth:     `{"error":"api.bad_request","status":400}`,
		Behaviour: "GET /actors with a create_ts cursor out of range",
		Why:       "a malformed input is the client's error: 400 naming the field, not a 500",
	},
	{
		Scenario: "paging_runners", Step: "runners cursor garbage", Path: "$",
		Reference: `{"error":"core.internal_error","status":500}`,
		Berth:     `{"error":"api.bad_request","status":400}`,
		Behaviour: "GET /runners with a cursor that is not one",
		Why:       "a malformed input is the client's error: 400 naming the field, not a 500",
	},
	{
		Scenario: "gateway_headers", Step: "the actor received", Path: ".headers.connection",
		Reference: `"close"`, Berth: missing,
		Behaviour: "the client's Connection header, sent on to the actor",
		Why:       "a hop-by-hop header (RFC 9110 §7.6.1) describes the client's connection to the engine, not the request: berth drops it, as every proxy must",
	},
	{
		Scenario: "gateway_headers", Step: "the actor received", Path: ".headers.x-forwarded-for",
		Reference: missing, Berth: `true`,
		Behaviour: "x-forwarded-for in the request the actor receives",
		Why:       "berth appends the client's address, as a reverse proxy does, so that an actor can see who called it",
	},
	{
		Scenario: "gateway_headers", Step: "the actor received", Path: ".headers.x-multi",
		Reference: `"b"`, Berth: `"a, b"`,
		Behaviour: "a request header the client sent twice, as the actor receives it",
		Why:       "the reference keeps the last value and loses the others; berth joins them with \", \" (RFC 9110 §5.3), which means the same as the repeated header",
	},
	{
		Scenario: "gateway_headers", Step: "actor status", Path: ".headers.vary",
		Reference: missing, Berth: `"origin"`,
		Behaviour: "Vary on a gateway answer to a request without Origin",
		Why:       "the CORS headers depend on Origin whether or not the request had one: without Vary: Origin a shared cache could hand this answer (Access-Control-Allow-Origin: *) to a credentialed cross-origin request, which the browser then refuses",
	},
	{
		Scenario: "auth_rest", Step: "* without a token", Path: ".error",
		Reference: `"api.forbidden"`, Berth: `"api.unauthorized"`,
		Behaviour: "a REST call without a token, on an engine with an admin token",
		Why:       "a missing credential is 401 (RFC 9110 §15.5.2), a wrong one 403; the reference answers 403 to both",
	},
	{
		Scenario: "auth_rest", Step: "* without a token", Path: ".status",
		Reference: `403`, Berth: `401`,
		Behaviour: "a REST call without a token, on an engine with an admin token",
		Why:       "a missing credential is 401 (RFC 9110 §15.5.2), a wrong one 403; the reference answers 403 to both",
	},
	{
		Scenario: "auth_rest", Step: "* without a token", Path: ".error",
		Reference: `"api.bad_request"`, Berth: `"api.unauthorized"`,
		Behaviour: "a malformed REST call without a token",
		Why:       "berth checks the token before anything else about a request, so that an anonymous caller learns nothing of what the API would accept; the reference validates the body first",
	},
	{
		Scenario: "auth_rest", Step: "* without a token", Path: ".status",
		Reference: `400`, Berth: `401`,
		Behaviour: "a malformed REST call without a token",
		Why:       "berth checks the token before anything else about a request; the reference validates the body first",
	},
	{
		Scenario: "auth_rest", Step: "* with a wrong token", Path: ".error",
		Reference: `"api.bad_request"`, Berth: `"api.forbidden"`,
		Behaviour: "a malformed REST call with a wrong token",
		Why:       "berth checks the token before anything else about a request; the reference validates the body first",
	},
	{
		Scenario: "auth_rest", Step: "* with a wrong token", Path: ".status",
		Reference: `400`, Berth: `403`,
		Behaviour: "a malformed REST call with a wrong token",
		Why:       "berth checks the token before anything else about a request; the reference validates the body first",
	},
	{
		Scenario: "auth_rest", Step: "POST /envoys/{envoy_key}/drain *", Path: ".error",
		Reference: `"api.not_found"`, Berth: `"api.unauthorized"`,
		Behaviour: "POST /envoys/{envoy_key}/drain without a token",
		Why:       "the endpoint is berth's (the reference has no envoy drain in its API): behind the token like every other",
	},
	{
		Scenario: "auth_rest", Step: "POST /envoys/{envoy_key}/drain *", Path: ".error",
		Reference: `"api.not_found"`, Berth: `"api.forbidden"`,
		Behaviour: "POST /envoys/{envoy_key}/drain with a wrong token",
		Why:       "the endpoint is berth's (the reference has no envoy drain in its API): behind the token like every other",
	},
	{
		Scenario: "auth_rest", Step: "POST /envoys/{envoy_key}/drain *", Path: ".status",
		Reference: `404`, Berth: `401`,
		Behaviour: "POST /envoys/{envoy_key}/drain without a token",
		Why:       "the endpoint is berth's (the reference has no envoy drain in its API): behind the token like every other",
	},
	{
		Scenario: "auth_rest", Step: "POST /envoys/{envoy_key}/drain *", Path: ".status",
		Reference: `404`, Berth: `403`,
		Behaviour: "POST /envoys/{envoy_key}/drain with a wrong token",
		Why:       "the endpoint is berth's (the reference has no envoy drain in its API): behind the token like every other",
	},
	{
		Scenario: "auth_rest", Step: "POST /runners/{runner_id}/drain *", Path: ".error",
		Reference: `"api.not_found"`, Berth: `"api.unauthorized"`,
		Behaviour: "POST /runners/{runner_id}/drain without a token",
		Why:       "the endpoint is berth's (the reference has no REST drain): behind the token like every other",
	},
	{
		Scenario: "auth_rest", Step: "POST /runners/{runner_id}/drain *", Path: ".error",
		Reference: `"api.not_found"`, Berth: `"api.forbidden"`,
		Behaviour: "POST /runners/{runner_id}/drain with a wrong token",
		Why:       "the endpoint is berth's (the reference has no REST drain): behind the token like every other",
	},
	{
		Scenario: "auth_rest", Step: "POST /runners/{runner_id}/drain *", Path: ".status",
		Reference: `404`, Berth: `401`,
		Behaviour: "POST /runners/{runner_id}/drain without a token",
		Why:       "the endpoint is berth's (the reference has no REST drain): behind the token like every other",
	},
	{
		Scenario: "auth_rest", Step: "POST /runners/{runner_id}/drain *", Path: ".status",
		Reference: `404`, Berth: `403`,
		Behaviour: "POST /runners/{runner_id}/drain with a wrong token",
		Why:       "the endpoint is berth's (the reference has no REST drain): behind the token like every other",
	},
	{
		Scenario: "auth_sockets", Step: "* without a token*", Path: ".reason",
		Reference: `"guard.missing_header#<ray>"`, Berth: `"api.unauthorized#<ray>"`,
		Behaviour: "the close reason of a runner or envoy socket opened without a token",
		Why:       "the same error as every REST call without a token, checked before the query",
	},
	{
		Scenario: "auth_sockets", Step: "*", Path: ".close",
		Reference: `1011`, Berth: `1008`,
		Behaviour: "the close code of a runner or envoy socket refused for its token",
		Why:       "1008 is the standard code for a policy violation (RFC 6455 §7.4.1); 1011 means the server failed. Runners reconnect after either",
	},
	{
		Scenario: "malformed_*", Step: "*", Path: ".error",
		Reference: `"<empty body>"`, Berth: `"api.method_not_allowed"`,
		Behaviour: "a method the endpoint does not have: 405",
		Why:       "every error answer is a JSON error, this one too; the reference's 405 has an empty body",
	},
	{
		Scenario: "malformed_requests", Step: "an actor id of another datacenter", Path: "$",
		Reference: `{"error":"datacenter.not_found","status":400}`, Berth: `{"error":"actor.not_found","status":404}`,
		Behaviour: "a call on an actor whose id names a datacenter the topology does not have",
		Why:       "no actor has that id anywhere: the actor is what is not found, and not-found is 404",
	},
	{
		Scenario: "malformed_requests", Step: "an unknown *", Path: ".status",
		Reference: `400`, Berth: `404`,
		Behaviour: "a call on an actor or namespace that does not exist (actor.not_found, namespace.not_found)",
		Why:       "HTTP says 404 for what does not exist; the reference's REST API answers 400 for every error but a few (its gateway answers actor.not_found 404)",
	},
	{
		Scenario: "malformed_requests", Step: "a bad percent escape", Path: "$",
		Reference: `{"error":"<not a JSON error: application/json>","status":200}`, Berth: `{"error":"api.bad_request","status":400}`,
		Behaviour: "a query string with a malformed percent escape (%zz)",
		Why:       "the reference drops the malformed pair and answers as if it were absent; berth refuses the request rather than guess what was meant",
	},
	{
		Scenario: "malformed_requests", Step: "a bad id in a list", Path: ".error",
		Reference: `"validation.invalid_input"`, Berth: `"api.bad_request"`,
		Behaviour: "GET /actors?actor_ids=nope",
		Why:       "the same 400 api.bad_request naming the parameter as every other query value that does not parse",
	},
	{
		Scenario: "header_bombs", Step: "200 headers", Path: ".error",
		Reference: `"<empty body>"`, Berth: `"guard.too_many_request_headers"`,
		Behaviour: "a request with more header fields than the 100 both engines take",
		Why:       "every error answer is a JSON error, this one too; the reference's HTTP layer answers an empty 431",
	},
	{
		Scenario: "header_bombs", Step: "one 100 KiB header", Path: "$",
		Reference: `{"error":"<not a JSON error: application/json>","status":200}`, Berth: `{"error":"guard.request_header_fields_too_large","status":431}`,
		Behaviour: "a request whose head is over 64 KiB (here one header of 100 KiB)",
		Why:       "berth bounds a head to 64 KiB by default (guard.max_header_bytes), so that a connection holds little of what a client sends before it is refused; the reference takes heads up to about 400 KiB, its HTTP layer's buffer",
	},
	{
		Scenario: "serverless_config", Step: "PUT url loopback", Path: "$",
		Reference: `{"body":{"endpoint_config_changed":true},"status":200}`,
		Berth:     `{"body":{"code":"invalid","group":"runner_config","message":"<text>","metadata":{"reason":"invalid serverless url: address 127.0.0.1 is not an allowed destination (loopback)"}},"status":400}`,
		Behaviour: "a serverless config whose url is a loopback address",
		Why:       "the engine calls serverless URLs itself: berth refuses loopback by default like the private and link-local ranges the reference refuses, so that a runner config cannot reach the engine host's own services; pegboard.serverless.allowed_cidrs or allow_private_urls allows it (docs/security.md)",
	},
	{
		Scenario: "body_limits", Step: "PUT /runner-configs with 1 MiB of metadata", Path: "$",
		Reference: `{"error":"<not a JSON error: application/json>","status":200}`, Berth: `{"error":"runner_config.invalid","status":400}`,
		Behaviour: "a runner config whose metadata is larger than 100,000 bytes",
		Why:       "berth keeps a runner config in one value of its store, which FoundationDB bounds to 100,000 bytes: it refuses a larger one naming metadata, where the reference takes it",
	},
	{
		Scenario: "body_limits", Step: "POST /namespaces with 100 KiB", Path: "$",
		Reference: `{"error":"namespace.failed_to_create","status":400}`, Berth: `{"error":"guard.invalid_request_body","status":413}`,
		Behaviour: "a namespace body over 64 KiB (a display name of 100 KiB)",
		Why:       "a namespace is two short names: berth refuses a body over 64 KiB (guard.max_api_small_body_bytes) before reading it whole, where the reference reads up to 2 MiB and then refuses the name",
	},
	{
		Scenario: "body_limits", Step: "POST /actors with 3 MiB", Path: "$",
		Reference: `{"error":"api.bad_request","status":400}`, Berth: `{"error":"guard.invalid_request_body","status":413}`,
		Behaviour: "a REST body over the 2 MiB both engines take",
		Why:       "413 says what is wrong (RFC 9110 §15.5.14), as for every other body berth refuses for its size; the reference answers 400 api.bad_request",
	},
	{
		Scenario: "socket_frames", Step: "*", Path: "$",
		Reference: `{"close":1011,"reason":"core.internal_error#<ray>"}`, Berth: `{"close":1002,"reason":"ws.protocol_error#<ray>"}`,
		Behaviour: "a runner socket that gets a frame no WebSocket client may send (unmasked, reserved bits, an unknown opcode, a fragmented control frame)",
		Why:       "the standard close code for a protocol violation (RFC 6455 §7.4.1) with a reason the runner can log, rather than a server failure",
	},
	{
		Scenario: "socket_frames", Step: "a frame cut short", Path: "$",
		Reference: `{"ended":"without a close frame"}`, Berth: `{"close":1002,"reason":"ws.protocol_error#<ray>"}`,
		Behaviour: "a runner socket whose client ends its side in the middle of a frame",
		Why:       "the client still reads: it is told why the socket ends",
	},
	{
		Scenario: "socket_frames", Step: "a 2^62-byte frame", Path: "$",
		Reference: `{"close":1011,"reason":"core.internal_error#<ray>"}`, Berth: `{"close":1009,"reason":"ws.message_too_big#<ray>"}`,
		Behaviour: "a runner socket that gets a frame header announcing more than 32 MiB",
		Why:       "the standard close code for a message too big to process (RFC 6455 §7.4.1), sent at the header, before any of it is read",
	},
	{
		Scenario: "gateway_websocket", Step: "* subprotocol", Path: "$",
		Reference: `{"dial":"failed","status":101}`,
		Berth:     `{"MessageBinary":{"same":true,"type":"MessageBinary"},"MessageText":{"same":true,"type":"MessageText"},"close":true,"subprotocol":""}`,
		Behaviour: "a gateway WebSocket whose client offers no subprotocol, or another than rivet",
		Why:       "the reference answers subprotocol rivet all the same, which a standard client must refuse (RFC 6455 §4.1), so the socket never opens; berth answers rivet only when offered",
	},
	{
		Scenario: "runner_reconnects", Step: "request during the cut", Path: "$",
		Reference: `{"actor":false,"elapsed":">=10s","same runner":false,"status":0}`, Berth: `{"actor":true,"elapsed":"<10s","same runner":true,"status":200}`,
		Behaviour: "a request for an actor whose runner's connection was cut, sent while the runner reconnects (same key, so the same runner)",
		Why:       "the reference never answers it (the client gave up after 30 s); berth waits for the host to reconnect, bounded by actor_ready_timeout, and the actor on the same runner answers",
	},
	{
		Scenario: "other_node", Step: "wake through the runner's node", Path: ".elapsed",
		Reference: `">=2s"`, Berth: `"<2s"`,
		Behaviour: "the second wake of an actor within a few seconds",
		Why:       "the reference delays repeated wakes of one actor by a doubling backoff (2 s, 4 s, 8 s, … reset after 10 min); berth backs off only after crashes, never to answer a request",
	},
}

// intended returns the indexes of the entries that hold d, if they do.
func intended(scenario string, d StepDiff) ([]int, bool) {
	if i, ok := find(scenario, d.Step, "$", d.Reference, d.Got); ok {
		return []int{i}, true
	}
	var all []int
	for _, p := range d.Places {
		path := p.Path
		if path == "" {
			path = "$"
		}
		i, ok := find(scenario, d.Step, path, p.Reference, p.Got)
		if !ok {
			return nil, false
		}
		all = append(all, i)
	}
	return all, true
}

// find returns the index of the entry with these fields.
func find(scenario, step, path, ref, got string) (int, bool) {
	for i, e := range differences {
		if glob(e.Scenario, scenario) && glob(e.Step, step) && e.Path == path && e.Reference == ref && e.Berth == got {
			return i, true
		}
	}
	return 0, false
}

// glob reports whether s matches pattern, where * stands for any text.
func glob(pattern, s string) bool {
	first, rest, found := strings.Cut(pattern, "*")
	if !found {
		return pattern == s
	}
	if !strings.HasPrefix(s, first) {
		return false
	}
	s = s[len(first):]
	for i := 0; i <= len(s); i++ {
		if glob(rest, s[i:]) {
			return true
		}
	}
	return false
}
