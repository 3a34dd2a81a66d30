package httpapi

import (
	_ "embed"
	"net/http"
)

// openAPIDoc is the OpenAPI 3.1 description of the API as served: every
// route, the ask resource, the error shape with every code. The tests keep
// it true (openapitest validates every request and response of the API's
// and the end-to-end tests against it).
//
//go:embed openapi.json
var openAPIDoc []byte

// OpenAPI returns the OpenAPI 3.1 document served at GET /v1/openapi.json.
// The slice is shared: do not modify it.
func OpenAPI() []byte { return openAPIDoc }

// openAPI serves GET /v1/openapi.json, without the bearer token: the
// document holds nothing secret and client generators fetch it bare.
func (s *Server) openAPI(w http.ResponseWriter, _ *http.Request) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(openAPIDoc)
}
