package mcp

import (
	"encoding/json"
	"testing"

	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/internal/asktest"
)

// The tool takes "workspace" as the HTTP API does: passed on to the ask,
// and a value that is no team or org id refused by the service's check.
func TestToolWorkspace(t *testing.T) {
	raw := json.RawMessage(`{"questions":[{"id":"q","question":"Go?"}],"workspace":" T0ACME "}`)
	in, _, err := decodeInput(raw, "C0DEF")
	if err != nil || in.Workspace != "T0ACME" {
		t.Fatalf("decodeInput: workspace %q, %v", in.Workspace, err)
	}
	in, _, err = decodeInput(json.RawMessage(`{"questions":[{"id":"q","question":"Go?"}],"workspace":"acme"}`), "C0DEF")
	if err == nil {
		err = interaction.CheckInput(asktest.New(asktest.Config{}), in)
	}
	if interaction.ErrorCode(err) != interaction.InvalidQuestion {
		t.Fatalf("workspace acme: %v", err)
	}
}
