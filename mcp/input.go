package mcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/slackask/slackask/interaction"
)

// toolInput is the tool's arguments as they arrive. It mirrors
// interaction.AskInput's fields that an agent may set. Names match
// exactly, with the aliases of interaction.QuestionAliases (multi_select),
// the one alias policy of every door; unknown properties are refused,
// naming the nearest known one.
type toolInput struct {
	Questions   []questionInput    `json:"questions"`
	Agent       *interaction.Agent `json:"agent"`
	Channel     string             `json:"channel"`
	User        string             `json:"user"`
	Workspace   string             `json:"workspace"`
	Timeout     json.RawMessage    `json:"timeout"`
	WaitSeconds json.RawMessage    `json:"waitSeconds"`
	// Responses is read by parseResponses (a number or "all") so that a
	// wrong value is named in the model's terms.
	Responses  json.RawMessage `json:"responses"`
	Responders []string        `json:"responders"`
	OnTimeout  string          `json:"onTimeout"`
	// Reaching people: DMs, repeated reminders, escalation steps.
	Notify      string            `json:"notify"`
	RemindAfter json.RawMessage   `json:"remindAfter"`
	RemindEvery json.RawMessage   `json:"remindEvery"`
	Escalation  []escalationInput `json:"escalation"`
}

// escalationInput is one escalation step as the tool takes it (after as
// seconds or a Go duration).
type escalationInput struct {
	After      json.RawMessage `json:"after"`
	Responders []string        `json:"responders"`
	Channel    string          `json:"channel"`
	Notify     string          `json:"notify"`
}

// getAnswerInput is the arguments of get_answer.
type getAnswerInput struct {
	ID          string          `json:"id"`
	WaitSeconds json.RawMessage `json:"waitSeconds"`
}

// maxWaitSeconds bounds waitSeconds: a call longer than a day is a mistake.
const maxWaitSeconds = 24 * time.Hour

// parseDurationArg reads the optional duration argument field (a number of
// seconds, or a Go duration string) with interaction.ParseDuration. ok is
// false when it is absent.
func parseDurationArg(raw json.RawMessage, field string) (d time.Duration, ok bool, err error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) || bytes.Equal(raw, []byte(`""`)) {
		return 0, false, nil
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		var n json.Number
		if json.Unmarshal(raw, &n) != nil {
			return 0, false, interaction.Errorf(interaction.InvalidQuestion,
				"%s must be a number of seconds or a Go duration such as \"30m\" or \"2h\"", field)
		}
		s = n.String()
	}
	d, err = interaction.ParseDuration(s)
	if err != nil {
		return 0, false, interaction.Errorf(interaction.InvalidQuestion,
			"%s: %v (use a number of seconds or a Go duration such as \"30m\" or \"2h\")", field, err)
	}
	return d, true, nil
}

// parseWait reads waitSeconds, at most maxWaitSeconds. Its errors are
// INVALID_REQUEST: how long the call waits is not part of the question.
func parseWait(raw json.RawMessage) (time.Duration, bool, error) {
	d, ok, err := parseDurationArg(raw, "waitSeconds")
	if err != nil {
		return 0, false, interaction.Errorf(interaction.InvalidRequest, "%s", interaction.ErrorMessage(err))
	}
	if d > maxWaitSeconds {
		return 0, false, interaction.Errorf(interaction.InvalidRequest, "waitSeconds: at most %d", int(maxWaitSeconds.Seconds()))
	}
	return d, ok, err
}

// checkObject refuses arguments that are not a JSON object, and unknown
// fields (naming the nearest known one).
func checkObject(raw json.RawMessage, v any, want string) error {
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil
	}
	if raw[0] != '{' {
		return interaction.Errorf(interaction.InvalidRequest, "the arguments must be a JSON object%s", want)
	}
	if err := interaction.CheckFields(raw, v); err != nil {
		return err
	}
	if err := json.Unmarshal(interaction.ResolveAliases(raw), v); err != nil {
		return interaction.Errorf(interaction.InvalidQuestion, "%s", describeJSONError(err))
	}
	return nil
}

// questionInput is a question as the seam has it; its alias multi_select
// was renamed to multiSelect (interaction.ResolveAliases) before decoding.
type questionInput struct {
	interaction.Question
}

// returnAtOnce is the wait of a call with waitSeconds 0: AwaitOptions.WaitFor
// takes 0 for no bound, and the smallest bound returns the ask as Create
// left it, as get_answer's 0 checks once.
const returnAtOnce = time.Nanosecond

// decodeInput turns the raw arguments of a call into an AskInput and the
// optional waitSeconds (absent: 0, wait until the ask ends; given as 0:
// returnAtOnce). Malformed arguments are
// an INVALID_QUESTION *interaction.Error that says what is wrong in JSON
// terms; a request without questions is left for interaction.Validate
// (EMPTY_QUESTIONS).
func decodeInput(raw json.RawMessage, defaultChannel string) (interaction.AskInput, time.Duration, error) {
	var in toolInput
	raw = bytes.TrimSpace(raw)
	if err := checkObject(raw, &in, ` with a "questions" array`); err != nil {
		return interaction.AskInput{}, 0, err
	}
	waitFor, given, err := parseWait(in.WaitSeconds)
	if err != nil {
		return interaction.AskInput{}, 0, err
	}
	if given && waitFor == 0 {
		waitFor = returnAtOnce
	}
	out := interaction.AskInput{
		Request:   interaction.Request{Agent: in.Agent},
		Channel:   strings.TrimSpace(in.Channel),
		User:      strings.TrimSpace(in.User),
		Workspace: strings.TrimSpace(in.Workspace),
	}
	if out.Channel == "" && out.User == "" {
		out.Channel = defaultChannel
	}
	timeout, _, err := parseDurationArg(in.Timeout, "timeout")
	if err != nil {
		return interaction.AskInput{}, 0, err
	}
	out.Timeout = interaction.Duration(timeout)
	if out.Responses, err = parseResponses(in.Responses); err != nil {
		return interaction.AskInput{}, 0, err
	}
	out.OnTimeout = interaction.OnTimeout(strings.TrimSpace(in.OnTimeout))
	if err := decodeReach(&out, in); err != nil {
		return interaction.AskInput{}, 0, err
	}
	for _, id := range in.Responders {
		out.Responders = append(out.Responders, strings.TrimSpace(id))
	}
	for _, q := range in.Questions {
		out.Questions = append(out.Questions, q.Question)
	}
	return out, waitFor, nil
}

// decodeReach reads notify, the reminders and the escalation steps.
func decodeReach(out *interaction.AskInput, in toolInput) error {
	out.Notify = interaction.Notify(strings.TrimSpace(in.Notify))
	after, _, err := parseDurationArg(in.RemindAfter, "remindAfter")
	if err != nil {
		return err
	}
	every, _, err := parseDurationArg(in.RemindEvery, "remindEvery")
	if err != nil {
		return err
	}
	out.RemindAfter, out.RemindEvery = interaction.Duration(after), interaction.Duration(every)
	for i, st := range in.Escalation {
		d, ok, err := parseDurationArg(st.After, fmt.Sprintf("escalation[%d].after", i))
		if err != nil {
			return err
		}
		if !ok {
			return interaction.Errorf(interaction.InvalidQuestion, "escalation[%d].after is required: how long after the question is asked the step fires, e.g. \"30m\"", i)
		}
		step := interaction.EscalationStep{After: interaction.Duration(d), Channel: strings.TrimSpace(st.Channel), Notify: interaction.Notify(strings.TrimSpace(st.Notify))}
		for _, id := range st.Responders {
			step.Responders = append(step.Responders, strings.TrimSpace(id))
		}
		out.Escalation = append(out.Escalation, step)
	}
	return nil
}

// parseResponses reads the optional responses argument: a number of people
// (1 or more) or "all". Absent or null is the zero count: one response.
func parseResponses(raw json.RawMessage) (interaction.ResponseCount, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return interaction.ResponseCount{}, nil
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		var n json.Number
		if json.Unmarshal(raw, &n) != nil {
			return interaction.ResponseCount{}, interaction.Errorf(interaction.InvalidQuestion,
				`responses must be a number of people (1 or more) or "all"`)
		}
		s = n.String()
	}
	c, err := interaction.ParseResponseCount(s)
	if err != nil {
		return interaction.ResponseCount{}, interaction.Errorf(interaction.InvalidQuestion, "%v", err)
	}
	return c, nil
}

// describeJSONError says what json.Unmarshal disliked, in the JSON terms a
// model understands rather than Go's.
func describeJSONError(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		where := strings.ReplaceAll(te.Field, ".Question.", ".") // the embedded seam question
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
