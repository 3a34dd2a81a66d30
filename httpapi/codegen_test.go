package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/slackask/slackask/httpapi"
)

// The generators and the runtime their code needs, pinned: CI fetches them
// from the Go module proxy and nothing else.
const (
	oapiCodegen    = "github.com/oapi-codegen/oapi-codegen/v2/cmd/oapi-codegen@v2.8.2"
	oapiRuntime    = "github.com/oapi-codegen/runtime@v1.9.0"
	ogenGenerator  = "github.com/ogen-go/ogen/cmd/ogen@v1.25.0"
	codegenEnvName = "SLACKASK_CODEGEN"
)

// TestGeneratedClients generates a Go client from the document as served
// (GET /v1/openapi.json) with oapi-codegen and with ogen, and compiles and
// vets each: the document is for third-party generators, and these two
// refused it before (a "type" array, an empty request schema, a schema
// named like ogen's own Option type). It needs the Go module proxy, so it
// runs only with SLACKASK_CODEGEN=1, which .ci/run sets for it.
func TestGeneratedClients(t *testing.T) {
	if os.Getenv(codegenEnvName) != "1" {
		t.Skip(codegenEnvName + "=1 runs it (it fetches the generators from the Go module proxy); .ci/run does")
	}
	doc := served(t)
	t.Run("oapi-codegen", func(t *testing.T) {
		dir := t.TempDir()
		write(t, filepath.Join(dir, "openapi.json"), doc)
		write(t, filepath.Join(dir, "go.mod"), "module example.com/slackaskclient\n\ngo 1.26\n")
		goCmd(t, dir, "run", oapiCodegen, "-generate", "types,client", "-package", "slackaskclient", "-o", "client.gen.go", "openapi.json")
		goCmd(t, dir, "get", oapiRuntime)
		goCmd(t, dir, "mod", "tidy")
		goCmd(t, dir, "build", "./...")
		goCmd(t, dir, "vet", "./...")
		gen, err := os.ReadFile(filepath.Join(dir, "client.gen.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"func (c *Client) CreateAsk(", "func (c *Client) GetAsk(", "func (c *Client) WithdrawAsk("} {
			if !strings.Contains(string(gen), want) {
				t.Errorf("the generated client lacks %s", want)
			}
		}
	})
	t.Run("ogen", func(t *testing.T) {
		dir := t.TempDir()
		write(t, filepath.Join(dir, "openapi.json"), doc)
		write(t, filepath.Join(dir, "go.mod"), "module example.com/slackaskogen\n\ngo 1.26\n")
		goCmd(t, dir, "run", ogenGenerator, "--target", "api", "--package", "api", "--clean", "openapi.json")
		goCmd(t, dir, "mod", "tidy")
		goCmd(t, dir, "build", "./...")
		goCmd(t, dir, "vet", "./...")
	})
}

// served returns the document as GET /v1/openapi.json serves it.
func served(t *testing.T) string {
	t.Helper()
	ts := httptest.NewServer(httpapi.New(httpapi.NewFake(), httpapi.Options{Token: "tok"}))
	defer ts.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", ts.URL+"/v1/openapi.json", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET /v1/openapi.json: %d %v", resp.StatusCode, err)
	}
	return string(b)
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// goCmd runs the go command in dir, outside this module and any workspace,
// and fails the test with its output when it fails.
func goCmd(t *testing.T, dir string, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=", "GOWORK=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// TestOpenAPILintRules checks, without Node, the rules of Redocly's
// "recommended" set this document once broke (.ci/run also runs Redocly's
// CLI itself): every operation, callbacks included, has a summary and a
// 4XX response, and info has a license.
func TestOpenAPILintRules(t *testing.T) {
	var doc struct {
		Info struct {
			License *struct {
				Name string `json:"name"`
			} `json:"license"`
		} `json:"info"`
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(httpapi.OpenAPI(), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Info.License == nil || doc.Info.License.Name == "" {
		t.Error("info.license: missing")
	}
	var mcp struct {
		Description string `json:"description"`
	}
	if err := json.Unmarshal(doc.Paths["/mcp"]["description"], &mcp.Description); err != nil ||
		!strings.Contains(mcp.Description, "ask_user_question") || !strings.Contains(mcp.Description, "get_answer") {
		t.Errorf("/mcp's description names not both tools: %q", mcp.Description)
	}
	type operation struct {
		Summary   string                                           `json:"summary"`
		Responses map[string]json.RawMessage                       `json:"responses"`
		Callbacks map[string]map[string]map[string]json.RawMessage `json:"callbacks"`
	}
	var check func(where string, raw json.RawMessage)
	check = func(where string, raw json.RawMessage) {
		var op operation
		if err := json.Unmarshal(raw, &op); err != nil {
			t.Fatalf("%s: %v", where, err)
		}
		if op.Summary == "" {
			t.Errorf("%s: no summary", where)
		}
		has4xx := false
		for code := range op.Responses {
			has4xx = has4xx || strings.HasPrefix(code, "4")
		}
		if !has4xx {
			t.Errorf("%s: no 4XX response", where)
		}
		for name, cb := range op.Callbacks {
			for expr, methods := range cb {
				for m, raw := range methods {
					check(where+" callback "+name+" "+strings.ToUpper(m)+" "+expr, raw)
				}
			}
		}
	}
	// oapi-codegen and ogen refuse a "type" array ("type": ["string",
	// "number"]); a value of either kind is a oneOf (see Duration).
	var typeArrays func(path string, v any)
	typeArrays = func(path string, v any) {
		switch v := v.(type) {
		case map[string]any:
			if _, ok := v["type"].([]any); ok {
				t.Errorf("%s: a \"type\" array; client generators refuse it (use oneOf)", path)
			}
			for k, e := range v {
				typeArrays(path+"/"+k, e)
			}
		case []any:
			for i, e := range v {
				typeArrays(fmt.Sprintf("%s/%d", path, i), e)
			}
		}
	}
	var whole any
	if err := json.Unmarshal(httpapi.OpenAPI(), &whole); err != nil {
		t.Fatal(err)
	}
	typeArrays("#", whole)
	methods := map[string]bool{"get": true, "put": true, "post": true, "delete": true, "options": true, "head": true, "patch": true, "trace": true}
	for path, item := range doc.Paths {
		for m, raw := range item {
			if methods[m] {
				check(strings.ToUpper(m)+" "+path, raw)
			}
		}
	}
}
