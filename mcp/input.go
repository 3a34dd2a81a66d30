package mcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"

	"github.com/slackask/slackask/interaction"
)

// toolInput is the tool's arguments as they arrive. It mirrors
// interaction.AskInput's fields that an agent may set, and accepts
// multi_select beside multiSelect (deepseek-harness's model writes the
// former). Unknown properties are ignored.
type toolInput struct {
	Questions []questionInput    `json:"questions"`
	Agent     *interaction.Agent `json:"agent"`
	Channel   string             `json:"channel"`
	User      string             `json:"user"`
	Timeout   json.RawMessage    `json:"timeout"`
}

type questionInput struct {
	ID               string               `json:"id"`
	Question         string               `json:"question"`
	Header           string               `json:"header"`
	Detail           string               `json:"detail"`
	Options          []interaction.Option `json:"options"`
	MultiSelect      *bool                `json:"multiSelect"`
	MultiSelectSnake *bool                `json:"multi_select"`
	Intent           *interaction.Intent  `json:"intent"`
}

// decodeInput turns the raw arguments of a call into an AskInput. Malformed
// arguments are an INVALID_QUESTION *interaction.Error that says what is
// wrong in JSON terms; a request without questions is left for
// interaction.Validate (EMPTY_QUESTIONS).
func decodeInput(raw json.RawMessage, defaultChannel string) (interaction.AskInput, error) {
	var in toolInput
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && !bytes.Equal(raw, []byte("null")) {
		if raw[0] != '{' {
			return interaction.AskInput{}, interaction.Errorf(interaction.InvalidQuestion,
				"the arguments must be a JSON object with a \"questions\" array")
		}
		if err := json.Unmarshal(raw, &in); err != nil {
			return interaction.AskInput{}, interaction.Errorf(interaction.InvalidQuestion, "%s", describeJSONError(err))
		}
	}
	out := interaction.AskInput{
		Request: interaction.Request{Agent: in.Agent},
		Channel: strings.TrimSpace(in.Channel),
		User:    strings.TrimSpace(in.User),
	}
	if out.Channel == "" && out.User == "" {
		out.Channel = defaultChannel
	}
	if t := bytes.TrimSpace(in.Timeout); len(t) > 0 && !bytes.Equal(t, []byte("null")) && !bytes.Equal(t, []byte(`""`)) {
		if err := json.Unmarshal(t, &out.Timeout); err != nil {
			return interaction.AskInput{}, interaction.Errorf(interaction.InvalidQuestion,
				"timeout: %v (use a Go duration such as \"30m\" or \"2h\")", err)
		}
	}
	for _, q := range in.Questions {
		multi := false
		switch {
		case q.MultiSelect != nil:
			multi = *q.MultiSelect
		case q.MultiSelectSnake != nil:
			multi = *q.MultiSelectSnake
		}
		out.Questions = append(out.Questions, interaction.Question{
			ID:          q.ID,
			Question:    q.Question,
			Header:      q.Header,
			Detail:      q.Detail,
			Options:     q.Options,
			MultiSelect: multi,
			Intent:      q.Intent,
		})
	}
	return out, nil
}

// describeJSONError says what json.Unmarshal disliked, in the JSON terms a
// model understands rather than Go's.
func describeJSONError(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		where := te.Field
		if where == "" {
			where = "the arguments"
		}
		return where + " must be " + jsonKind(te.Type) + ", not " + article(te.Value)
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return "the arguments are not valid JSON: " + se.Error()
	}
	return "the arguments do not fit the input schema: " + err.Error()
}

func jsonKind(t reflect.Type) string {
	if t == nil {
		return "another type"
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Struct, reflect.Map:
		return "an object"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		return "a number"
	}
	return "another type"
}

func article(jsonValue string) string {
	switch {
	case jsonValue == "":
		return "that"
	case strings.HasPrefix(jsonValue, "number"):
		return "a number"
	case jsonValue == "array" || jsonValue == "object":
		return "an " + jsonValue
	case jsonValue == "bool":
		return "a boolean"
	}
	return "a " + jsonValue
}
