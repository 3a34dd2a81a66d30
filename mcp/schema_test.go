package mcp

import (
	"encoding/json"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/slackask/slackask/interaction"
)

// The tool's input schema describes the fields of a question and an option
// that the Go types define (multi_select is the one alias), and toolInput
// reads each of them: the kind table and the types are the definition.
func TestInputSchemaMatchesTypes(t *testing.T) {
	var schema struct {
		Properties struct {
			Questions struct {
				Items struct {
					Properties map[string]struct {
						Items struct {
							Properties map[string]json.RawMessage `json:"properties"`
						} `json:"items"`
					} `json:"properties"`
				} `json:"items"`
			} `json:"questions"`
		} `json:"properties"`
	}
	if err := json.Unmarshal([]byte(inputSchema), &schema); err != nil {
		t.Fatal(err)
	}
	q := schema.Properties.Questions.Items.Properties
	var qNames, oNames []string
	for k := range q {
		if k != "multi_select" {
			qNames = append(qNames, k)
		}
	}
	for k := range q["options"].Items.Properties {
		oNames = append(oNames, k)
	}
	sort.Strings(qNames)
	sort.Strings(oNames)
	if want := interaction.JSONNames(interaction.Question{}); !slices.Equal(qNames, want) {
		t.Errorf("schema question properties %v; interaction.Question has %v", qNames, want)
	}
	if want := interaction.JSONNames(interaction.Option{}); !slices.Equal(oNames, want) {
		t.Errorf("schema option properties %v; interaction.Option has %v", oNames, want)
	}
	in := interaction.JSONNames(questionInput{})
	for _, n := range interaction.JSONNames(interaction.Question{}) {
		if !slices.Contains(in, n) {
			t.Errorf("questionInput does not read %q", n)
		}
	}
	// The model is told when to use the one-tap fields.
	for _, want := range []string{`"confirm": true`, `"note": "required"`, `"default"`, `"display"`} {
		if !strings.Contains(toolDescription, want) {
			t.Errorf("the tool description does not mention %s", want)
		}
	}
}
