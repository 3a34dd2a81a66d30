// Package openapitest keeps httpapi's OpenAPI document true: Transport
// validates every request a test's HTTP client sends and every response it
// gets against the document, and fails the test on a route, parameter,
// status, header or field the document does not describe.
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
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"

	"github.com/slackask/slackask/httpapi"
)

// Load parses and validates doc, an OpenAPI 3.1 document, and returns it
// with a router for it. Errors are wrapped.
func Load(ctx context.Context, doc []byte) (*openapi3.T, routers.Router, error) {
	loader := openapi3.NewLoader()
	t, err := loader.LoadFromData(doc)
	if err != nil {
		return nil, nil, fmt.Errorf("openapitest: load: %w", err)
	}
	if err := t.Validate(ctx); err != nil {
		return nil, nil, fmt.Errorf("openapitest: invalid document: %w", err)
	}
	r, err := gorillamux.NewRouter(t)
	if err != nil {
		return nil, nil, fmt.Errorf("openapitest: router: %w", err)
	}
	return t, r, nil
}

// Transport returns an http.RoundTripper that sends each request through
// next (http.DefaultTransport when nil) and checks the exchange against
// httpapi.OpenAPI():
//
//   - the request's method and path must be an operation of the document;
//   - a request the document says is valid must be answered with a status
//     the operation lists, and the response's headers and body must match
//     its schema (the schemas allow no undescribed field);
//   - a request the document says is invalid (a test sending bad input on
//     purpose) must be answered with a 4xx the operation lists, whose body
//     matches too.
//
// An event stream's body is not read (it may never end); its status is
// still checked. The bearer token is not checked: the server does that.
//
// Mismatches are collected and reported with tb.Errorf when tb's test
// ends (its Cleanup), so requests from any goroutine may use the
// transport; exchanges after that are not checked. Load failing fails tb
// at once.
func Transport(tb testing.TB, next http.RoundTripper) http.RoundTripper {
	tb.Helper()
	doc, router, err := Load(context.Background(), httpapi.OpenAPI())
	if err != nil {
		tb.Fatal(err)
	}
	if next == nil {
		next = http.DefaultTransport
	}
	v := &validating{next: next, doc: doc, router: router}
	tb.Cleanup(func() {
		for _, f := range v.finish() {
			tb.Errorf("openapi: %s", f)
		}
	})
	return v
}

type validating struct {
	next   http.RoundTripper
	doc    *openapi3.T
	router routers.Router

	mu       sync.Mutex
	failures []string
	done     bool
}

func (v *validating) fail(format string, args ...any) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if !v.done {
		v.failures = append(v.failures, fmt.Sprintf(format, args...))
	}
}

// finish returns the failures and stops collecting.
func (v *validating) finish() []string {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.done = true
	return v.failures
}

// CloseIdleConnections passes on to next, so that http.Client's
// CloseIdleConnections still reaches the underlying transport.
func (v *validating) CloseIdleConnections() {
	if c, ok := v.next.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// RoundTrip sends req through next and checks the exchange.
func (v *validating) RoundTrip(req *http.Request) (*http.Response, error) {
	what := req.Method + " " + req.URL.Path
	var body []byte
	if req.Body != nil && req.Body != http.NoBody {
		b, err := io.ReadAll(req.Body)
		_ = req.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("openapitest: reading the request body: %w", err)
		}
		body = b
		req.Body = io.NopCloser(bytes.NewReader(b))
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
	}

	route, pathParams, err := v.router.FindRoute(req)
	if err != nil {
		v.fail("%s: not in the document: %v", what, err)
		return v.next.RoundTrip(req)
	}
	opts := &openapi3filter.Options{
		AuthenticationFunc:    openapi3filter.NoopAuthenticationFunc,
		IncludeResponseStatus: true,
		MultiError:            true,
	}
	// Validate a copy: the filter reads and may rewrite the body.
	vreq := req.Clone(req.Context())
	vreq.Body = io.NopCloser(bytes.NewReader(body))
	in := &openapi3filter.RequestValidationInput{Request: vreq, PathParams: pathParams, Route: route, Options: opts}
	reqErr := openapi3filter.ValidateRequest(req.Context(), in)

	resp, err := v.next.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	if reqErr != nil && (resp.StatusCode < 400 || resp.StatusCode >= 500) {
		v.fail("%s: the document calls the request invalid (%v), yet it was answered %d", what, oneLine(reqErr), resp.StatusCode)
	}
	out := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: in,
		Status:                 resp.StatusCode,
		Header:                 resp.Header,
		Options:                opts,
	}
	if isStream(resp) {
		// Check the status only: the body may never end.
		if route.Operation.Responses.Status(resp.StatusCode) == nil {
			v.fail("%s: status %d is not in the document", what, resp.StatusCode)
		}
		return resp, nil
	}
	respBody, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(respBody))
	if err != nil {
		return resp, nil // the caller sees the truncated body; nothing to check
	}
	out.SetBodyBytes(respBody)
	if err := openapi3filter.ValidateResponse(req.Context(), out); err != nil {
		v.fail("%s: response %d does not match the document: %v; body %s", what, resp.StatusCode, oneLine(err), truncate(respBody))
	}
	return resp, nil
}

func isStream(resp *http.Response) bool {
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	return mt == "text/event-stream"
}

func oneLine(err error) string {
	var me openapi3.MultiError
	if errors.As(err, &me) {
		parts := make([]string, 0, len(me))
		for _, e := range me {
			parts = append(parts, oneLine(e))
		}
		return strings.Join(parts, "; ")
	}
	msg := err.Error()
	// Schema errors go on to print the whole schema and value: the reason
	// and where are enough, and the body is reported beside.
	for _, cut := range []string{"\nSchema:", " Schema:", "\nValue:", " Value:"} {
		if i := strings.Index(msg, cut); i > 0 {
			msg = msg[:i]
		}
	}
	return strings.Join(strings.Fields(msg), " ")
}

func truncate(b []byte) string {
	const most = 300
	if len(b) > most {
		return string(b[:most]) + "…"
	}
	return string(b)
}

// CheckCallback checks a callback slackask sent, its request r with its raw
// body, against the askEnded callback of POST /v1/asks in
// httpapi.OpenAPI(): the signature headers and the ask resource. Errors
// are wrapped.
func CheckCallback(ctx context.Context, r *http.Request, body []byte) error {
	doc, _, err := Load(ctx, httpapi.OpenAPI())
	if err != nil {
		return err
	}
	// An event has a seq (askEvent); the ask resource has none (askEnded).
	name := "askEnded"
	var probe struct {
		Seq json.RawMessage `json:"seq"`
	}
	if json.Unmarshal(body, &probe) == nil && probe.Seq != nil {
		name = "askEvent"
	}
	var op *openapi3.Operation
	if create := doc.Paths.Value("/v1/asks"); create != nil && create.Post != nil {
		if cb := create.Post.Callbacks[name]; cb != nil && cb.Value != nil {
			if pi := cb.Value.Value("{$request.body#/callbackUrl}"); pi != nil {
				op = pi.Post
			}
		}
	}
	if op == nil {
		return fmt.Errorf("openapitest: the document has no %s callback on POST /v1/asks", name)
	}
	route := &routers.Route{Spec: doc, Path: r.URL.Path, PathItem: &openapi3.PathItem{Post: op}, Method: http.MethodPost, Operation: op}
	vreq := r.Clone(ctx)
	vreq.Body = io.NopCloser(bytes.NewReader(body))
	in := &openapi3filter.RequestValidationInput{Request: vreq, Route: route, Options: &openapi3filter.Options{
		AuthenticationFunc: openapi3filter.NoopAuthenticationFunc,
		MultiError:         true,
	}}
	if err := openapi3filter.ValidateRequest(ctx, in); err != nil {
		return fmt.Errorf("openapitest: the callback does not match the document: %s: %w", oneLine(err), err)
	}
	return nil
}
