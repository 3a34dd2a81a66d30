package httpapi

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/slackask/slackask/interaction"
)

// statusByCode is the one table from error code to HTTP status. Codes not
// in it (INTERNAL, DUPLICATE_PROVIDER, anything unknown) are 500.
var statusByCode = map[interaction.Code]int{
	interaction.EmptyQuestions:      http.StatusBadRequest,
	interaction.InvalidQuestion:     http.StatusBadRequest,
	interaction.InvalidRequest:      http.StatusBadRequest,
	interaction.BadIntent:           http.StatusBadRequest,
	interaction.Unauthorized:        http.StatusUnauthorized,
	interaction.Forbidden:           http.StatusForbidden,
	interaction.NotFound:            http.StatusNotFound,
	interaction.AskAborted:          http.StatusConflict,
	interaction.AskCancelled:        http.StatusConflict,
	interaction.AskTimeout:          http.StatusConflict,
	interaction.IdempotencyMismatch: http.StatusConflict,
	interaction.MethodNotAllowed:    http.StatusMethodNotAllowed,
	interaction.SlackError:          http.StatusBadGateway,
	interaction.NoProvider:          http.StatusServiceUnavailable,
}

// StatusOf returns the HTTP status for err's code (interaction.ErrorCode):
// 400 EMPTY_QUESTIONS, INVALID_QUESTION, INVALID_REQUEST, BAD_INTENT; 401 UNAUTHORIZED;
// 403 FORBIDDEN; 404 NOT_FOUND; 405 METHOD_NOT_ALLOWED; 409 ASK_ABORTED, ASK_CANCELLED,
// ASK_TIMEOUT, IDEMPOTENCY_MISMATCH; 502
// SLACK_ERROR; 503 NO_PROVIDER; 500 for everything else, including errors
// that are not *interaction.Error. It returns 200 for a nil error.
func StatusOf(err error) int {
	if err == nil {
		return http.StatusOK
	}
	if st, ok := statusByCode[interaction.ErrorCode(err)]; ok {
		return st
	}
	return http.StatusInternalServerError
}

// errorBody is the JSON of every error response.
type errorBody struct {
	Error *interaction.Error `json:"error"`
}

// fail writes err as a coded error with the status of StatusOf. A 500 says
// only "internal error" with code INTERNAL; the real error goes to the log.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	s.failAt(w, r.Method, r.URL.Path, err)
}

// failAt is fail for a request known by its method and path.
func (s *Server) failAt(w http.ResponseWriter, method, path string, err error) {
	st := StatusOf(err)
	if st == http.StatusInternalServerError {
		s.opts.Logger.Error().Err(err).Str("method", method).Str("path", path).Msg("internal error")
		writeError(w, st, interaction.Internal, "internal error")
		return
	}
	writeError(w, st, interaction.ErrorCode(err), interaction.ErrorMessage(err))
}

// writeError writes {"error":{"name":"UserInteractionError","code","message"}}.
func writeError(w http.ResponseWriter, status int, code interaction.Code, msg string) {
	writeJSON(w, status, errorBody{Error: &interaction.Error{Code: code, Message: msg}})
}

// writeJSON writes v as the JSON body with status. Responses are never
// cached.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		b = []byte(`{"error":{"name":"UserInteractionError","code":"INTERNAL","message":"internal error"}}`)
	}
	h := w.Header()
	h.Set("Content-Type", "application/json; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

// recorder remembers the status written through it, for the request log.
// It passes Flush on (SSE handlers mounted with Mount need it) and exposes
// the underlying writer to http.ResponseController via Unwrap.
type recorder struct {
	http.ResponseWriter
	start  time.Time // of the request
	status int
	wrote  bool
	parked bool // the handler parked the long-poll: log it when answered
}

func (r *recorder) WriteHeader(code int) {
	if !r.wrote {
		r.status, r.wrote = code, true
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	if !r.wrote {
		r.status, r.wrote = http.StatusOK, true
	}
	return r.ResponseWriter.Write(b)
}

// Flush sends buffered data to the client.
func (r *recorder) Flush() {
	if !r.wrote {
		r.status, r.wrote = http.StatusOK, true
	}
	_ = http.NewResponseController(r.ResponseWriter).Flush()
}

// Unwrap returns the underlying ResponseWriter.
func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

func (r *recorder) statusCode() int {
	if !r.wrote {
		return http.StatusOK
	}
	return r.status
}

// probeWriter captures the status and headers of the mux's own 404/405
// handlers so they can be answered as JSON.
type probeWriter struct {
	header http.Header
	code   int
}

func (p *probeWriter) Header() http.Header         { return p.header }
func (p *probeWriter) Write(b []byte) (int, error) { return len(b), nil }
func (p *probeWriter) WriteHeader(code int)        { p.code = code }

// NewServer returns an http.Server for h at addr, hardened for the API:
// ReadHeaderTimeout 10s and ReadTimeout 30s (slow clients cannot hold a
// connection while sending), IdleTimeout 120s, MaxHeaderBytes 64 KiB, and
// no WriteTimeout, because GET and POST ?wait= hold a response for up to
// Options.MaxWait (long-polls) and mounted handlers may stream. It does not
// listen; the caller runs Serve on a listener wrapped by LimitActive (which
// keeps slow and waiting clients from taking every place and answers
// net/http's own 431 and 400 refusals as JSON), and stops it with
// Server.Shutdown (http.Server.Shutdown alone does not see the parked
// long-polls).
func NewServer(addr string, h http.Handler) *http.Server {
	return &http.Server{
		Addr:              addr,
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      0,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
	}
}
