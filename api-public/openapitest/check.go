package openapitest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"slices"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
)

// headerError is the response header that names an error's group.code (pkg/apihttp.HeaderError).
const headerError = "x-rivet-error"

// Check validates one exchange with the public API against the contract and returns every way
// it departs from it, or nil. reqBody and respBody are the full bodies (nil for none); the
// bodies of req and resp are not read.
//
// The rules:
//   - The request path must be documented. A documented path with an undocumented method
//     must be answered 405 with an Error body.
//   - A request the contract accepts (parameters, no unknown query parameter unless the
//     operation is marked x-berth-ignore-unknown-query, body) must get a
//     response whose status the operation declares, with a body matching that response's
//     schema.
//   - A request the contract rejects must get a declared 4xx response with a valid Error
//     body: the server may not accept what the contract forbids, nor fail with a 5xx.
//   - Bearer tokens are not checked here: whether one is needed depends on the server's
//     configuration. A 401 or 403 is valid only where the operation declares it.
//   - Every error response (4xx, 5xx) that carries an x-rivet-error header must name the
//     body's group.code in it.
func Check(req *http.Request, reqBody []byte, resp *http.Response, respBody []byte) error {
	c, err := load()
	if err != nil {
		return err
	}
	return c.check(req, reqBody, resp, respBody)
}

func (c *contract) check(req *http.Request, reqBody []byte, resp *http.Response, respBody []byte) error {
	// Route on a copy: the router and validators read the URL, headers and body.
	r := req.Clone(context.Background())
	r.Body = io.NopCloser(bytes.NewReader(reqBody))
	r.ContentLength = int64(len(reqBody))

	route, pathParams, err := c.router.FindRoute(r)
	switch {
	case errors.Is(err, routers.ErrMethodNotAllowed):
		if resp.StatusCode != http.StatusMethodNotAllowed {
			return fmt.Errorf("%s is not documented for this path, so the server must answer 405, not %d", req.Method, resp.StatusCode)
		}
		return c.checkErrorBody(resp, respBody)
	case err != nil:
		return fmt.Errorf("the path is not in openapi.yaml (%v); document it, or mark a deliberate request to an undocumented path with openapitest.Unchecked", err)
	}

	in := &openapi3filter.RequestValidationInput{
		Request:    r,
		PathParams: pathParams,
		Route:      route,
		Options: &openapi3filter.Options{
			AuthenticationFunc:                openapi3filter.NoopAuthenticationFunc,
			SkipSettingDefaults:               true,
			RejectWhenRequestBodyNotSpecified: true,
			MultiError:                        true,
		},
	}
	reqErr := errors.Join(unknownQueryParams(r, route), openapi3filter.ValidateRequest(context.Background(), in))

	out := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: in,
		Status:                 resp.StatusCode,
		Header:                 resp.Header,
		Body:                   io.NopCloser(bytes.NewReader(respBody)),
		Options: &openapi3filter.Options{
			IncludeResponseStatus: true,
			MultiError:            true,
		},
	}
	var problems []error
	if reqErr != nil && (resp.StatusCode < 400 || resp.StatusCode > 499) {
		problems = append(problems, fmt.Errorf("openapi.yaml rejects this request, so the server must answer 4xx, not %d; the request: %w", resp.StatusCode, reqErr))
	}
	if err := openapi3filter.ValidateResponse(context.Background(), out); err != nil {
		problems = append(problems, fmt.Errorf("response: %w", err))
	}
	if resp.StatusCode >= 400 {
		if err := checkErrorHeader(resp, respBody); err != nil {
			problems = append(problems, err)
		}
	}
	return errors.Join(problems...)
}

// unknownQueryParams reports query parameters the operation does not document (the server
// rejects them with 400 api.bad_request), unless the operation is marked
// x-berth-ignore-unknown-query.
func unknownQueryParams(r *http.Request, route *routers.Route) error {
	if v, _ := route.Operation.Extensions["x-berth-ignore-unknown-query"].(bool); v {
		return nil
	}
	known := map[string]bool{}
	for _, params := range []openapi3.Parameters{route.PathItem.Parameters, route.Operation.Parameters} {
		for _, p := range params {
			if p.Value != nil && p.Value.In == openapi3.ParameterInQuery {
				known[p.Value.Name] = true
			}
		}
	}
	var unknown []string
	for name := range r.URL.Query() {
		if !known[name] {
			unknown = append(unknown, name)
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	slices.Sort(unknown)
	return fmt.Errorf("undocumented query parameter(s) %s", strings.Join(unknown, ", "))
}

// checkErrorBody checks an error response that no operation describes (a 405): a JSON Error.
func (c *contract) checkErrorBody(resp *http.Response, body []byte) error {
	if err := checkJSONContentType(resp); err != nil {
		return err
	}
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		return fmt.Errorf("the error body is not JSON: %w", err)
	}
	schema := c.doc.Components.Schemas["Error"]
	if schema == nil || schema.Value == nil {
		return errors.New("openapi.yaml has no Error schema")
	}
	if err := schema.Value.VisitJSON(v, openapi3.MultiErrors()); err != nil {
		return fmt.Errorf("the error body does not match the Error schema: %w", err)
	}
	return checkErrorHeader(resp, body)
}

func checkJSONContentType(resp *http.Response) error {
	ct := resp.Header.Get("Content-Type")
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil || mt != "application/json" {
		return fmt.Errorf("the error body must be application/json, got Content-Type %q", ct)
	}
	return nil
}

// checkErrorHeader checks that an x-rivet-error header, when present, names the body's error.
func checkErrorHeader(resp *http.Response, body []byte) error {
	h := resp.Header.Get(headerError)
	if h == "" {
		return nil
	}
	var e struct{ Group, Code string }
	if err := json.Unmarshal(body, &e); err != nil {
		return nil // the body check reports it
	}
	if want := e.Group + "." + e.Code; h != want {
		return fmt.Errorf("%s header is %q, but the body is %s", headerError, h, want)
	}
	return nil
}
