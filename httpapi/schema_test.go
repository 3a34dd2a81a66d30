package httpapi_test

import (
	"context"
	"slices"
	"sort"
	"testing"

	"github.com/slackask/slackask/httpapi"
	"github.com/slackask/slackask/httpapi/openapitest"
	"github.com/slackask/slackask/interaction"
)

// The OpenAPI document describes exactly the fields the Go types of a
// question, an option and an answer item have: the kind table and the
// types are the definition, the document is checked against them.
func TestOpenAPIMatchesTypes(t *testing.T) {
	doc, _, err := openapitest.Load(context.Background(), httpapi.OpenAPI())
	if err != nil {
		t.Fatal(err)
	}
	for name, v := range map[string]any{
		"Question":       interaction.Question{},
		"QuestionOption": interaction.Option{},
		"AnswerItem":     interaction.AnswerItem{},
		"Response":       interaction.Response{},
	} {
		s := doc.Components.Schemas[name]
		if s == nil {
			t.Errorf("no schema %s", name)
			continue
		}
		var have []string
		for p := range s.Value.Properties {
			have = append(have, p)
		}
		sort.Strings(have)
		if want := interaction.JSONNames(v); !slices.Equal(have, want) {
			t.Errorf("schema %s has properties %v; the Go type has %v", name, have, want)
		}
	}
}

// The enums of the kind fields are the values interaction accepts.
func TestOpenAPIKindEnums(t *testing.T) {
	doc, _, err := openapitest.Load(context.Background(), httpapi.OpenAPI())
	if err != nil {
		t.Fatal(err)
	}
	enum := func(schema, prop string) []string {
		var out []string
		for _, v := range doc.Components.Schemas[schema].Value.Properties[prop].Value.Enum {
			out = append(out, v.(string))
		}
		return out
	}
	var displays []string
	for _, d := range interaction.Displays {
		displays = append(displays, string(d))
	}
	for _, c := range []struct {
		schema, prop string
		want         []string
	}{
		{"Question", "display", displays},
		{"QuestionOption", "style", []string{interaction.StylePrimary, interaction.StyleDanger}},
		{"QuestionOption", "note", []string{interaction.NoteRequired, interaction.NoteOptional}},
	} {
		if got := enum(c.schema, c.prop); !slices.Equal(got, c.want) {
			t.Errorf("%s.%s enum %v, want %v", c.schema, c.prop, got, c.want)
		}
	}
}
