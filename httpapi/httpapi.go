// Package httpapi serves slackask's v1 HTTP API over an
// interaction.AskService:
//
//	POST   /v1/asks          create an ask (?wait=DURATION to long-poll)
//	GET    /v1/asks          list asks (?status= &limit= &before=RFC3339)
//	GET    /v1/asks/{id}     the ask (?wait=DURATION to long-poll)
//	DELETE /v1/asks/{id}     withdraw the ask
//	GET    /v1/asks/{id}/events  the ask's audit trail (EventLog)
//	GET    /v1/events        the feed of every ask's events (?after=SEQ &limit=N &wait=DURATION)
//	GET    /v1/openapi.json  the OpenAPI 3.1 description of the API
//	GET    /healthz          process up, always 200
//	GET    /readyz           200 when Options.Ready says so, else 503
//
// HEAD is served wherever GET is, long-polls included.
//
// A long-poll waits in a handler blocked in AskService.Wait or, when the
// service is a Notifier and the request HTTP/1.x, parked: its connection
// taken from net/http and answered later with the same bytes (see
// Notifier). Stop the http.Server with Server.Shutdown, which also answers
// the parked ones.
//
// Every route but /healthz, /readyz and /v1/openapi.json requires the
// bearer token when one is configured; handlers added with Mount are behind
// the same check. Errors are
// {"error":{"name":"UserInteractionError","code":…,"message":…}} with the
// status of the code (see StatusOf).
package httpapi

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/slackask/slackask/interaction"
)

// MaxBodyBytes caps a request body (1 MiB); a larger one is answered 413.
const MaxBodyBytes = 1 << 20

// DefaultMaxWait is the cap on ?wait= when Options.MaxWait is zero.
const DefaultMaxWait = 10 * time.Minute

// MaxListLimit is the largest ?limit= that GET /v1/asks accepts.
const MaxListLimit = 1000

// readyTimeout bounds one call of Options.Ready.
const readyTimeout = 5 * time.Second

// Options configure the API.
type Options struct {
	// Token, when not empty, is the bearer token every route but /healthz,
	// /readyz and /v1/openapi.json requires (Authorization: Bearer <token>).
	Token string
	// Keys, when set, resolves a bearer token that is not Token to the
	// scoped API key it is (interaction.Caller, put in the request's
	// context for the service and mounted handlers to enforce): nil and
	// no error for a token that is no live key (401).
	Keys func(ctx context.Context, token string) (*interaction.Caller, error)
	// Ready reports whether the service can take asks (Slack connected);
	// /readyz answers 503 with its error as the reason. Nil means ready.
	Ready func(ctx context.Context) error
	// MaxWait caps ?wait=; a longer wait is silently shortened to it. Zero
	// means DefaultMaxWait (10m). Keep it below any proxy's idle timeout.
	MaxWait time.Duration
	// Logger receives one line per request (method, path, status, duration;
	// never bodies, query strings or headers; successful /healthz and
	// /readyz at debug level, the rest at info) and the real error behind
	// every 500. The zero Logger discards.
	Logger zerolog.Logger
}

// IdempotentCreator is an optional interface of an AskService that can tell
// a new ask from one returned for an IdempotencyKey already used. When the
// service implements it, POST /v1/asks answers 200 (not 201) for an existing
// ask; otherwise it always answers 201.
type IdempotentCreator interface {
	// CreateIdempotent is AskService.Create that also reports whether the
	// ask was created by this call (false: an existing ask was returned).
	CreateIdempotent(ctx context.Context, in interaction.AskInput) (ask interaction.Ask, created bool, err error)
}

// Server is the HTTP API. It is an http.Handler; create it with New.
type Server struct {
	svc      interaction.AskService
	notifier Notifier // svc, when it is one; nil: long-polls block
	opts     Options
	tokenSum [sha256.Size]byte
	mux      *http.ServeMux
	// publicPaths are served without the bearer token (MountPublic).
	publicPaths []string

	closing   context.Context    // done once Close is called
	stopWaits context.CancelFunc // ends closing

	pmu        sync.Mutex               // guards parked, closed and sweeping
	parked     map[*parkedPoll]struct{} // long-polls waiting on hijacked connections
	closed     bool                     // Close was called
	sweeping   bool                     // the sweep goroutine runs
	sweepEvery time.Duration            // how often sweep looks for callers gone
	sweepStop  chan struct{}            // closed by Close: sweep returns
	pwg        sync.WaitGroup           // one per parked poll (finish), one for sweep, one for a collection
	gcEvery    int64                    // parks between two collections (collectAfterParks)
	parks      atomic.Int64             // parks since the last collection
	collecting atomic.Bool              // a collection runs
}

// New returns the API over svc. It panics if svc is nil (a wiring bug).
func New(svc interaction.AskService, opts Options) *Server {
	if svc == nil {
		panic("httpapi: New with a nil AskService")
	}
	if opts.MaxWait <= 0 {
		opts.MaxWait = DefaultMaxWait
	}
	s := &Server{
		svc: svc, opts: opts, mux: http.NewServeMux(),
		parked: map[*parkedPoll]struct{}{}, sweepEvery: sweepEvery, sweepStop: make(chan struct{}), gcEvery: collectAfterParks,
	}
	s.notifier, _ = svc.(Notifier)
	s.closing, s.stopWaits = context.WithCancel(context.Background())
	if opts.Token != "" {
		s.tokenSum = sha256.Sum256([]byte(opts.Token))
	}
	s.mux.HandleFunc("POST /v1/asks", s.create)
	s.mux.HandleFunc("GET /v1/asks", s.list)
	s.mux.HandleFunc("GET /v1/asks/{id}", s.get)
	s.mux.HandleFunc("DELETE /v1/asks/{id}", s.withdraw)
	s.mux.HandleFunc("GET /v1/asks/{id}/events", s.askEvents)
	s.mux.HandleFunc("GET /v1/events", s.feed)
	s.mux.HandleFunc("GET /healthz", s.healthz)
	s.mux.HandleFunc("GET /readyz", s.readyz)
	s.mux.HandleFunc("GET /v1/openapi.json", s.openAPI)
	return s
}

// Mount adds h at pattern (http.ServeMux syntax, e.g. "/mcp" or
// "GET /metrics") behind the same bearer-token check and request log as the
// API. It is safe to call while serving. Like http.ServeMux.Handle it panics
// when pattern is invalid or conflicts with a route already registered.
func (s *Server) Mount(pattern string, h http.Handler) {
	s.mux.Handle(pattern, h)
}

// MountPublic adds h at path (an exact path, served for every method h
// serves) without the bearer-token check, behind the request log only:
// for callers that prove themselves otherwise, as Slack does by signing
// its requests. Call it before serving.
func (s *Server) MountPublic(path string, h http.Handler) {
	s.mux.Handle(path, h)
	s.publicPaths = append(s.publicPaths, path)
}

// probe reports whether path is one of the API's own public routes, which
// probes and client generators call often.
func probe(path string) bool {
	return path == "/healthz" || path == "/readyz" || path == "/v1/openapi.json"
}

// public reports whether path is served without the bearer token.
func (s *Server) public(path string) bool {
	return probe(path) || slices.Contains(s.publicPaths, path)
}

// ServeHTTP checks the bearer token, routes the request and logs it.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rec := &recorder{ResponseWriter: w, start: time.Now()}
	defer func() {
		if p := recover(); p != nil {
			if p == http.ErrAbortHandler {
				panic(p)
			}
			s.opts.Logger.Error().Str("method", r.Method).Str("path", r.URL.Path).
				Str("panic", fmt.Sprint(p)).Msg("http handler panicked")
			if !rec.wrote {
				writeError(rec, http.StatusInternalServerError, interaction.Internal, "internal error")
			}
		}
		if !rec.parked { // a parked long-poll is logged when answered
			s.logRequest(r.Method, r.URL.Path, rec.statusCode(), rec.start)
		}
	}()

	if !s.public(r.URL.Path) {
		caller, ok, err := s.authorize(r)
		if err != nil {
			s.fail(rec, r, err)
			return
		}
		if !ok {
			rec.Header().Set("WWW-Authenticate", `Bearer realm="slackask"`)
			writeError(rec, http.StatusUnauthorized, interaction.Unauthorized, "missing or invalid bearer token")
			return
		}
		if caller != nil {
			r = r.WithContext(interaction.WithCaller(r.Context(), caller))
		}
	}
	// mux.Handler only finds the handler; mux.ServeHTTP also sets the
	// path values ({id}) on r.
	if h, pattern := s.mux.Handler(r); pattern == "" {
		s.noRoute(rec, r, h)
		return
	}
	s.mux.ServeHTTP(rec, r)
}

// logRequest writes the request log line of one request started at start.
func (s *Server) logRequest(method, path string, status int, start time.Time) {
	lvl := zerolog.InfoLevel
	if probe(path) && status == http.StatusOK {
		lvl = zerolog.DebugLevel // probes would drown the log
	}
	s.opts.Logger.WithLevel(lvl).
		Str("method", method).
		Str("path", path).
		Int("status", status).
		Float64("durationMs", float64(time.Since(start).Microseconds())/1000).
		Msg("http request")
}

// authorize reports whether r may be served and as whom: the configured
// bearer token (or none configured, and no key presented) is the
// all-powerful caller (nil); a live API key (Options.Keys) is its scoped
// Caller; anything else is refused. Both sides of the token comparison are
// hashed first so that neither length nor content leaks. An error is the
// key store's, never carrying the token.
func (s *Server) authorize(r *http.Request) (caller *interaction.Caller, ok bool, err error) {
	h := r.Header.Get("Authorization")
	scheme, tok, hasBearer := strings.Cut(h, " ")
	hasBearer = hasBearer && strings.EqualFold(scheme, "Bearer")
	tok = strings.TrimSpace(tok)
	if s.opts.Token != "" && hasBearer {
		sum := sha256.Sum256([]byte(tok))
		if subtle.ConstantTimeCompare(sum[:], s.tokenSum[:]) == 1 {
			return nil, true, nil
		}
	}
	if s.opts.Keys != nil && hasBearer && tok != "" {
		c, err := s.opts.Keys(r.Context(), tok)
		if err != nil || c != nil {
			return c, c != nil, err
		}
		if s.opts.Token == "" {
			return nil, false, nil // a key unknown or revoked is refused even on an open server
		}
	}
	return nil, s.opts.Token == "", nil
}

// noRoute answers a request no pattern matched: 405 METHOD_NOT_ALLOWED
// with the Allow header when the path exists for other methods, else 404
// NOT_FOUND, both as coded JSON errors.
func (s *Server) noRoute(w http.ResponseWriter, r *http.Request, h http.Handler) {
	probe := &probeWriter{header: http.Header{}}
	h.ServeHTTP(probe, r)
	if probe.code == http.StatusMethodNotAllowed {
		if allow := probe.header.Get("Allow"); allow != "" {
			w.Header().Set("Allow", allow)
		}
		writeError(w, http.StatusMethodNotAllowed, interaction.MethodNotAllowed,
			fmt.Sprintf("method %s is not allowed on %s", r.Method, r.URL.Path))
		return
	}
	writeError(w, http.StatusNotFound, interaction.NotFound, "no such route: "+r.URL.Path)
}

// create serves POST /v1/asks.
func (s *Server) create(w http.ResponseWriter, r *http.Request) {
	wait, err := s.waitParam(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	in, status, err := decodeAskInput(w, r)
	if err != nil {
		writeError(w, status, interaction.ErrorCode(err), interaction.ErrorMessage(err))
		return
	}

	// Once accepted, a create runs to its end even if the client hangs up,
	// so that a retry with the same idempotency key finds the ask.
	ctx := context.WithoutCancel(r.Context())
	var (
		ask     interaction.Ask
		created = true
	)
	if ic, ok := s.svc.(IdempotentCreator); ok {
		ask, created, err = ic.CreateIdempotent(ctx, in)
	} else {
		ask, err = s.svc.Create(ctx, in)
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	status = http.StatusCreated
	if !created {
		status = http.StatusOK
	}
	if wait > 0 && !ask.Status.Ended() {
		pending := ask
		a, parked, err := s.longPoll(w, r, ask.ID, wait, status, &pending)
		switch {
		case parked:
			return
		case err == nil:
			ask = a
		case r.Context().Err() == nil:
			// The ask exists: answer with it rather than lose its id.
			s.opts.Logger.Warn().Err(err).Str("ask", ask.ID).Msg("wait after create failed")
		}
	}
	writeJSON(w, status, ask)
}

// get serves GET /v1/asks/{id}.
func (s *Server) get(w http.ResponseWriter, r *http.Request) {
	wait, err := s.waitParam(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	id := r.PathValue("id")
	var ask interaction.Ask
	if wait > 0 {
		var parked bool
		if ask, parked, err = s.longPoll(w, r, id, wait, http.StatusOK, nil); parked {
			return
		}
	} else {
		ask, err = s.svc.Get(r.Context(), id)
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, ask)
}

// wait long-polls the ask for at most d, blocking in AskService.Wait. The
// request's context ends it early (the client went away) without touching
// the ask, and so does Close. While it blocks, its connection does not
// count as busy for LimitActive; when LimitActive holds as many blocked
// waits as it allows, it answers the ask as it stands without waiting.
func (s *Server) wait(ctx context.Context, id string, d time.Duration) (interaction.Ask, error) {
	release, ok := holdWait(ctx)
	if !ok {
		return s.svc.Get(ctx, id)
	}
	defer release()
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	stop := context.AfterFunc(s.closing, cancel)
	defer stop()
	return s.svc.Wait(ctx, id)
}

// withdraw serves DELETE /v1/asks/{id}.
func (s *Server) withdraw(w http.ResponseWriter, r *http.Request) {
	// Like create, a withdrawal runs to its end once received.
	ask, err := s.svc.Withdraw(context.WithoutCancel(r.Context()), r.PathValue("id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, ask)
}

// listResponse is the body of GET /v1/asks.
type listResponse struct {
	Asks []interaction.Ask `json:"asks"`
}

// list serves GET /v1/asks.
func (s *Server) list(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	var f interaction.ListFilter
	if v := q.Get("status"); v != "" {
		f.Status = interaction.Status(v)
		if !f.Status.Valid() {
			s.fail(w, r, interaction.Errorf(interaction.InvalidRequest,
				"status %q: want pending, answered, cancelled, aborted or expired", v))
			return
		}
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > MaxListLimit {
			s.fail(w, r, interaction.Errorf(interaction.InvalidRequest,
				"limit %q: want a whole number from 1 to %d", v, MaxListLimit))
			return
		}
		f.Limit = n
	}
	if v := q.Get("before"); v != "" {
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			s.fail(w, r, interaction.Errorf(interaction.InvalidRequest,
				"before %q: want an RFC 3339 time like 2024-01-02T15:04:05Z", v))
			return
		}
		f.Before = t
	}
	asks, err := s.svc.List(r.Context(), f)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if asks == nil {
		asks = []interaction.Ask{}
	}
	writeJSON(w, http.StatusOK, listResponse{Asks: asks})
}

type healthResponse struct {
	Status string `json:"status"`
	Reason string `json:"reason,omitempty"`
}

// healthz serves GET /healthz: the process is up.
func (s *Server) healthz(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, healthResponse{Status: "ok"})
}

// readyz serves GET /readyz: 200 {"status":"ok"} when Ready returns nil,
// else 503 {"status":"not ready","reason":…}.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	if s.opts.Ready != nil {
		ctx, cancel := context.WithTimeout(r.Context(), readyTimeout)
		defer cancel()
		if err := s.opts.Ready(ctx); err != nil {
			writeJSON(w, http.StatusServiceUnavailable, healthResponse{Status: "not ready", Reason: err.Error()})
			return
		}
	}
	writeJSON(w, http.StatusOK, healthResponse{Status: "ok"})
}

// waitParam parses ?wait= with interaction.ParseDuration (a Go duration
// such as "30s" or a number of seconds; NaN, infinities, negative and huge
// values are refused), capped at MaxWait. Absent means 0 (no waiting).
func (s *Server) waitParam(r *http.Request) (time.Duration, error) {
	v := r.URL.Query().Get("wait")
	if v == "" {
		return 0, nil
	}
	d, err := interaction.ParseDuration(v)
	if err != nil {
		return 0, interaction.Errorf(interaction.InvalidRequest, "wait: %v", err)
	}
	return min(d, s.opts.MaxWait), nil
}

// decodeAskInput reads the body of POST /v1/asks. On failure it returns the
// status (400, or 413 for a body over MaxBodyBytes) and a coded error whose
// message is for the client: INVALID_REQUEST for a body that is not a JSON
// object at all (empty, too large, malformed), INVALID_QUESTION naming the
// offending field where JSON decoding can tell.
func decodeAskInput(w http.ResponseWriter, r *http.Request) (interaction.AskInput, int, error) {
	var in interaction.AskInput
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return in, http.StatusRequestEntityTooLarge, interaction.Errorf(interaction.InvalidRequest, "request body larger than 1 MiB")
		}
		return in, http.StatusBadRequest, interaction.Errorf(interaction.InvalidRequest, "reading the request body: %v", err)
	}
	if len(strings.TrimSpace(string(body))) == 0 {
		return in, http.StatusBadRequest, interaction.Errorf(interaction.InvalidRequest, "request body is empty: want a JSON object with questions")
	}
	// Names are matched exactly, before encoding/json (which would match
	// "TIMEOUT" to timeout) reads them; a misspelt field would otherwise be
	// dropped without a word and the ask posted without it.
	if err := interaction.CheckFields(body, &in); err != nil {
		return in, http.StatusBadRequest, err
	}
	body = interaction.ResolveAliases(body)
	err = json.Unmarshal(body, &in)
	if err == nil {
		return in, 0, nil
	}
	invalid := func(format string, args ...any) (interaction.AskInput, int, error) {
		return in, http.StatusBadRequest, interaction.Errorf(interaction.InvalidQuestion, format, args...)
	}
	var (
		syn *json.SyntaxError
		typ *json.UnmarshalTypeError
	)
	switch {
	case errors.As(err, &syn):
		return in, http.StatusBadRequest, interaction.Errorf(interaction.InvalidRequest, "malformed JSON at byte %d: %v", syn.Offset, syn)
	case errors.As(err, &typ):
		if typ.Field == "" {
			return in, http.StatusBadRequest, interaction.Errorf(interaction.InvalidRequest, "the request body must be a JSON object, not %s", typ.Value)
		}
		return invalid("%s: must be %s, not %s", fieldPath(body, typ), jsonKind(typ.Type.Kind().String()), typ.Value)
	}
	// Errors of interaction.Duration's UnmarshalJSON carry no field name:
	// find the duration field that fails.
	var raw map[string]json.RawMessage
	if json.Unmarshal(body, &raw) == nil {
		for _, name := range []string{"timeout", "remindAfter", "remindEvery"} {
			if v, ok := raw[name]; ok {
				var d interaction.Duration
				if derr := d.UnmarshalJSON(v); derr != nil {
					return invalid("%s: %v", name, derr)
				}
			}
		}
		var steps []struct {
			After json.RawMessage `json:"after"`
		}
		if json.Unmarshal(raw["escalation"], &steps) == nil {
			for i, st := range steps {
				var d interaction.Duration
				if derr := d.UnmarshalJSON(st.After); st.After != nil && derr != nil {
					return invalid("escalation[%d].after: %v", i, derr)
				}
			}
		}
	}
	return invalid("invalid request body: %v", err)
}

// fieldPath names the field of a type error as the validation messages do
// ("questions[1].options[0].label"). encoding/json reports the path without
// array indices and with the embedded Request's Go name, so the indices are
// recovered by finding the first element whose value does not decode into
// the expected type.
func fieldPath(body []byte, e *json.UnmarshalTypeError) string {
	field := strings.TrimPrefix(e.Field, "Request.")
	if p, ok := locate(body, strings.Split(field, "."), e.Type); ok {
		return strings.TrimPrefix(p, ".")
	}
	return field
}

// locate walks raw along the JSON keys in parts, trying every element of the
// arrays on the way, and returns the path of the first value that does not
// decode into typ.
func locate(raw json.RawMessage, parts []string, typ reflect.Type) (string, bool) {
	var arr []json.RawMessage
	isArr := json.Unmarshal(raw, &arr) == nil
	if len(parts) == 0 {
		if json.Unmarshal(raw, reflect.New(typ).Interface()) == nil {
			return "", false
		}
		if isArr && typ.Kind() != reflect.Slice && typ.Kind() != reflect.Array {
			for i, el := range arr {
				if json.Unmarshal(el, reflect.New(typ).Interface()) != nil {
					return fmt.Sprintf("[%d]", i), true
				}
			}
		}
		return "", true
	}
	if isArr {
		for i, el := range arr {
			if p, ok := locate(el, parts, typ); ok {
				return fmt.Sprintf("[%d]%s", i, p), true
			}
		}
		return "", false
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) != nil {
		return "", false
	}
	v, ok := obj[parts[0]] // CheckFields has made every key exact
	if !ok {
		return "", false
	}
	p, ok := locate(v, parts[1:], typ)
	return "." + parts[0] + p, ok
}

// jsonKind names a Go kind in JSON terms for error messages.
func jsonKind(kind string) string {
	switch kind {
	case "string":
		return "a string"
	case "bool":
		return "a boolean"
	case "slice", "array":
		return "an array"
	case "struct", "map", "ptr":
		return "an object"
	case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64", "float32", "float64":
		return "a number"
	}
	return kind
}
